"""A large Keystone database for `idnode-bench --keystone-import`: Keystone 30's own schema
(keystone-manage db_sync and bootstrap on a fresh SQLite file), then USERS local users (with a
password row each), PROJECTS projects in the default domain and ASSIGNMENTS role assignments
(users on projects, spread evenly), bulk-inserted with sqlite3.

usage: keystone_import_fixture.py DIR USERS PROJECTS ASSIGNMENTS
(run with the reference's Python: /opt/anchors/keystone-venv/bin/python)
"""
import os
import subprocess
import sys
import time
import uuid

import bcrypt

out, users, projects, assignments = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
os.makedirs(out, exist_ok=True)
db = os.path.join(out, "keystone.db")
conf = os.path.join(out, "keystone.conf")
with open(conf, "w") as f:
    f.write(f"""[database]
connection = sqlite:///{db}
[fernet_tokens]
key_repository = {out}/fernet-keys
[credential]
key_repository = {out}/credential-keys
[identity]
password_hash_rounds = 4
""")
manage = os.path.join(os.path.dirname(sys.executable), "keystone-manage")
env = dict(os.environ, OS_KEYSTONE_CONFIG_FILES=conf)
started = time.time()
for args in (["db_sync"], ["fernet_setup", "--keystone-user", "root", "--keystone-group", "root"],
             ["credential_setup", "--keystone-user", "root", "--keystone-group", "root"],
             ["bootstrap", "--bootstrap-password", "bench-admin-pw", "--bootstrap-region-id", "RegionOne",
              "--bootstrap-public-url", "http://127.0.0.1:5000/v3"]):
    subprocess.run([manage, "--config-file", conf] + args, check=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

import sqlite3  # noqa: E402

con = sqlite3.connect(db)
member = con.execute("SELECT id FROM role WHERE name = 'member'").fetchone()[0]
# One bcrypt hash (cost 4) for every user: the import moves hashes, it never computes them.
hashed = bcrypt.hashpw(b"bench-user-pw", bcrypt.gensalt(4)).decode()
now = "2026-01-01 00:00:00.000000"
now_us = 1767225600000000
project_ids = [uuid.uuid4().hex for _ in range(projects)]
con.executemany(
    "INSERT INTO project (id, name, domain_id, description, enabled, extra, parent_id, is_domain) "
    "VALUES (?, ?, 'default', '', 1, '{}', 'default', 0)",
    ((p, f"bench-project-{i}") for i, p in enumerate(project_ids)))
user_ids = [uuid.uuid4().hex for _ in range(users)]
con.executemany(
    "INSERT INTO user (id, domain_id, enabled, extra, default_project_id, created_at) "
    "VALUES (?, 'default', 1, '{}', NULL, ?)", ((u, now) for u in user_ids))
con.executemany(
    "INSERT INTO local_user (user_id, domain_id, name, failed_auth_count, failed_auth_at) "
    "VALUES (?, 'default', ?, NULL, NULL)", ((u, f"bench-user-{i}") for i, u in enumerate(user_ids)))
locals_ = dict(con.execute("SELECT user_id, id FROM local_user"))
con.executemany(
    "INSERT INTO password (local_user_id, password_hash, created_at, expires_at, self_service, "
    "created_at_int, expires_at_int) VALUES (?, ?, ?, NULL, 0, ?, NULL)",
    ((locals_[u], hashed, now, now_us) for u in user_ids))
per_user = max(1, assignments // max(1, users))


def rows():
    made = 0
    for i, u in enumerate(user_ids):
        for k in range(per_user):
            if made == assignments:
                return
            yield ("UserProject", u, project_ids[(i * per_user + k) % projects], member, 0)
            made += 1


con.executemany(
    "INSERT INTO assignment (type, actor_id, target_id, role_id, inherited) VALUES (?, ?, ?, ?, ?)", rows())
con.commit()
counts = {t: con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("user", "project", "assignment")}
print(f"fixture: {counts} in {time.time() - started:.1f} s")
