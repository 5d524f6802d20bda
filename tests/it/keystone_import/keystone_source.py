#!/opt/anchors/keystone-venv/bin/python
"""Build a populated, real Keystone 30 deployment as the source for the
`idnode import keystone` end-to-end test, and record what Keystone answered.

Usage (run it with the Keystone venv's python; it needs nothing else than that
venv and python-openstackclient's venv):

    /opt/anchors/keystone-venv/bin/python tests/it/keystone_import/keystone_source.py \
        --out DIR --port PORT [--keep-running] [--database-url URL]

What it does, in order:

1. Writes DIR/keystone.conf: database DIR/keystone.db (sqlite, unless
   --database-url is given), fernet keys in DIR/fernet-keys (tokens and auth
   receipts), credential keys in DIR/credential-keys, token lifetime 3600 s,
   bcrypt with cost 4 (fast), lockout after 3 failed attempts for 1800 s,
   password history of 3; auth methods totp and saml2 added to keystone's
   default list, and [federation] remote_id_attribute = HTTP_X_IDP_REMOTE_ID.
2. keystone-manage db_sync, fernet_setup, credential_setup, bootstrap (admin /
   ADMIN_PASSWORD, project admin, role admin, region RegionOne, identity
   endpoints http://127.0.0.1:PORT/v3 on the three interfaces).
3. Serves Keystone on 127.0.0.1:PORT: gunicorn (one sync worker) when the
   Keystone venv has it, otherwise werkzeug's WSGI server (werkzeug comes with
   Keystone; scripts/install-test-deps installs no gunicorn). The werkzeug
   server is this same file run with --serve. With sqlite, keystone's own
   switch for sqlite foreign keys is on (as the reference's run.sh does).
   Server, Keystone and keystone-manage all log to DIR/keystone.log.
4. Populates Keystone through python-openstackclient (one `openstack` process
   per command, up to 3 at a time): domains (one disabled at the end),
   nested tagged projects, users in every password state, groups, roles
   (implied, domain-specific, immutable), every grant kind (user/group x
   project/domain, inherited on a domain and on a project, system),
   catalog (regions with parents, services, endpoints on 3 interfaces, a
   disabled one, endpoint group + project, project endpoint), policy,
   unified limits, EC2 / TOTP / generic credentials, application
   credentials (one with access rules), trusts (impersonating or not),
   federation (IdP with remote id, mapping, protocol, service provider).
   Done through the HTTP API instead, each because OSC cannot, as said
   where it is done: a domain-specific role implying a global one, the
   OAuth1 consumer and OAuth1 request/access tokens, an endpoint-policy
   association. Done in SQL, because Keystone has no API for it: expiring
   one user's password (expire_eve). The lockout is made the honest way,
   by failed logins.
5. Issues real tokens (POST /v3/auth/tokens, the federation auth URL, OAuth1)
   and records Keystone's validation body for each; rotates the fernet keys
   once in between so that tokens made with the now-secondary key are in the
   set; revokes one token (DELETE /v3/auth/tokens). Federated login sends the
   assertion as X-Remote-User / X-Remote-Groups headers and the IdP's remote
   id as X-IDP-Remote-ID (what an Apache module would set in front).
   Finally logs every user in once to check the recorded state.
6. Writes DIR/expected.json: admin_password; users [{id, name, domain_id,
   password, old_passwords (oldest first), state ok|locked|expired|mfa|
   disabled|domain_disabled|federated, login_status, login_error, options,
   enabled, password_expires_at, default_project_id}]; named_ids (our name
   -> id); ids (kind -> sorted ids from Keystone's API); role_assignments,
   role_assignments_names, role_assignments_effective_names (OSC -f json,
   canonically sorted); catalog and catalog_acme_child (OSC catalog list,
   sorted); application_credentials [{id, user_id, name, secret}]; ec2
   [{access, secret, user_id, project_id}]; consumers; oauth1; totp;
   mfa_receipt; tokens [{kind, token, validation, ...}]; revoked_tokens;
   revoked_token_details; fernet_keys; credential_keys; api (Keystone's full
   list bodies per kind, plus tags, members, trust roles, endpoint filters,
   role assignments); config; keystone_version; keystone_url; database_url;
   server.
7. Stops Keystone, unless --keep-running: then the script still exits once
   expected.json is written, but leaves Keystone serving, prints
   `KEYSTONE_PID=<pid>` and `KEYSTONE_URL=<url>` on stdout (the pid also in
   DIR/keystone.pid; SIGTERM to it stops the server), and a watchdog
   process stops that server after --keep-running-timeout seconds (default
   3600) if nobody did. Neither keeps the caller's stdout/stderr open.

Everything binds 127.0.0.1 only. The whole run is bounded by --timeout
(default 300 s); any failure exits non-zero with a message on stderr.

--database-url takes an SQLAlchemy URL (e.g. mysql+pymysql://u:p@127.0.0.1/ks)
for a MariaDB source later; its driver must then be importable in the Keystone
venv (PyMySQL is not there today).
"""

import argparse
import base64
import datetime
import hashlib
import hmac
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request

KEYSTONE_VENV = os.environ.get('KEYSTONE_VENV', '/opt/anchors/keystone-venv')
OSC_VENV = os.environ.get('OSC_VENV', '/opt/anchors/osc-venv')

ADMIN_PASSWORD = 'import-admin-secret'
IDP_REMOTE_ID = 'https://idp.acme.example/saml2'
# Base32 secret of the MFA user's TOTP credential (keystone reads the blob as
# base32, 6 digits, 30 s, HMAC-SHA1).
TOTP_SECRET = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP'

OSC_TIMEOUT = 90
MANAGE_TIMEOUT = 180


class FixtureError(Exception):
    pass


def log(msg):
    print('[keystone_source %6.1fs] %s' % (time.monotonic() - T0, msg),
          file=sys.stderr, flush=True)


T0 = time.monotonic()
# straight to 127.0.0.1, whatever *_proxy variables say
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def canon_sorted(items):
    """Sort a list of JSON values by their canonical JSON text."""
    return sorted(items, key=lambda x: json.dumps(x, sort_keys=True))


# --------------------------------------------------------------------------
# server mode: this file run by the keystone venv python with --serve
# --------------------------------------------------------------------------

def _build_wsgi_app(config_file):
    """Keystone's public WSGI application for config_file."""
    os.environ['OS_KEYSTONE_CONFIG_FILES'] = config_file
    os.environ.pop('OS_KEYSTONE_CONFIG_DIR', None)
    # keystone hands sys.argv to oslo.config when it loads; keep ours away.
    sys.argv = sys.argv[:1]
    if os.environ.get('KEYSTONE_SOURCE_SQLITE_FK') == '1':
        # keystone's own switch (its unit tests use it): enforce sqlite
        # foreign keys so ON DELETE CASCADE behaves as on MySQL.
        from keystone.common.sql import core as sql_core
        sql_core.enable_sqlite_foreign_key()
    from keystone.wsgi import api
    return api.application


def __getattr__(name):
    # gunicorn loads `keystone_source:wsgi_application`; build it lazily so
    # that importing this module for anything else stays cheap.
    if name == 'wsgi_application':
        return _build_wsgi_app(os.environ['KEYSTONE_SOURCE_CONFIG'])
    raise AttributeError(name)


def serve(config_file, port):
    app = _build_wsgi_app(config_file)
    from werkzeug import serving
    server = serving.make_server('127.0.0.1', port, app, threaded=False)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    server.serve_forever()


def watchdog(pid, seconds):
    """Stop server pid after seconds (the --keep-running safety net)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return
        time.sleep(2)
    _stop_pid(pid)


def _alive(pid):
    """pid exists and is not a zombie (an orphan may wait to be reaped)."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except (OSError, IndexError):
        return False


def _die_with_parent():
    try:
        import ctypes
        libc = ctypes.CDLL('libc.so.6', use_errno=True)
        libc.prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG
    except OSError:
        pass


def _stop_pid(pid, grace=15):
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError:
        return
    end = time.monotonic() + grace
    while time.monotonic() < end:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                return
        except ChildProcessError:
            if not _alive(pid):
                return
        time.sleep(0.1)
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


# --------------------------------------------------------------------------
# the fixture
# --------------------------------------------------------------------------

class Source:
    def __init__(self, args):
        self.out = os.path.abspath(args.out)
        self.port = args.port
        self.base = 'http://127.0.0.1:%d' % self.port
        self.url = self.base + '/v3'
        self.conf = os.path.join(self.out, 'keystone.conf')
        self.log_path = os.path.join(self.out, 'keystone.log')
        self.db_url = args.database_url or (
            'sqlite:///' + os.path.join(self.out, 'keystone.db'))
        self.is_sqlite = self.db_url.startswith('sqlite')
        self.server_kind = args.server
        self.keep_running = args.keep_running
        self.server = None
        self.ids = {}          # our own names -> ids
        self.users = {}        # name -> user record for expected.json
        self.extra = {}        # misc facts for expected.json
        self.tokens = []
        self.revoked = []
        self.admin_token = None
        self.read_token = None   # system-scoped admin, for collect()

    # ---- files ----------------------------------------------------------
    def prepare_dir(self):
        if os.path.exists(self.out) and os.listdir(self.out):
            self.log_path = None    # not ours: don't point at it
            raise FixtureError('%s exists and is not empty; give a new or '
                               'empty directory' % self.out)
        os.makedirs(self.out, exist_ok=True)
        for d in ('fernet-keys', 'credential-keys'):
            os.makedirs(os.path.join(self.out, d), mode=0o700, exist_ok=True)
        conf = f"""\
# written by tests/it/keystone_import/keystone_source.py
[DEFAULT]
debug = false
log_file = {self.log_path}

[database]
connection = {self.db_url}

[token]
provider = fernet
expiration = 3600

[fernet_tokens]
key_repository = {self.out}/fernet-keys
max_active_keys = 3

[fernet_receipts]
# keystone's default too: receipts share the token key repository
key_repository = {self.out}/fernet-keys

[credential]
key_repository = {self.out}/credential-keys

[auth]
# keystone's default list plus totp (for the MFA user) and saml2 (the
# federation protocol's name must be an auth method; keystone maps it to its
# `mapped` plugin)
methods = external,password,token,oauth1,mapped,application_credential,totp,saml2

[federation]
# where keystone finds the IdP's remote id. Behind Apache, mod_shib or
# mod_auth_openidc would set it; here the client sends an X-IDP-Remote-ID
# header, which reaches keystone as this WSGI variable.
remote_id_attribute = HTTP_X_IDP_REMOTE_ID

[identity]
password_hash_algorithm = bcrypt
password_hash_rounds = 4

[security_compliance]
lockout_failure_attempts = 3
lockout_duration = 1800
unique_last_password_count = 3
"""
        with open(self.conf, 'w') as f:
            f.write(conf)

    # ---- processes ------------------------------------------------------
    def manage(self, *args):
        cmd = [os.path.join(KEYSTONE_VENV, 'bin', 'keystone-manage'),
               '--config-file', self.conf] + list(args)
        log('keystone-manage ' + args[0])
        with open(self.log_path, 'ab') as lf:
            try:
                p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=lf,
                                   stderr=subprocess.PIPE,
                                   timeout=MANAGE_TIMEOUT, env=self.clean_env())
            except subprocess.TimeoutExpired:
                raise FixtureError('keystone-manage %s timed out' % args[0])
        if p.returncode != 0:
            raise FixtureError('keystone-manage %s failed (exit %d): %s' % (
                args[0], p.returncode, p.stderr.decode(errors='replace')[-3000:]))

    @staticmethod
    def clean_env():
        env = {k: v for k, v in os.environ.items()
               if not k.startswith('OS_') and k != 'PYTHONPATH'
               and not k.lower().endswith('_proxy')}
        env['PYTHONWARNINGS'] = 'ignore'
        env['PYTHONDONTWRITEBYTECODE'] = '1'   # no __pycache__ in the repo
        return env

    @staticmethod
    def key_owner():
        """--keystone-user/--keystone-group for the key repositories: us."""
        import grp
        import pwd
        return ['--keystone-user', pwd.getpwuid(os.getuid()).pw_name,
                '--keystone-group', grp.getgrgid(os.getgid()).gr_name]

    def setup_keystone(self):
        self.manage('db_sync')
        self.manage('fernet_setup', *self.key_owner())
        self.manage('credential_setup', *self.key_owner())
        self.manage('bootstrap',
                    '--bootstrap-password', ADMIN_PASSWORD,
                    '--bootstrap-username', 'admin',
                    '--bootstrap-project-name', 'admin',
                    '--bootstrap-role-name', 'admin',
                    '--bootstrap-service-name', 'keystone',
                    '--bootstrap-region-id', 'RegionOne',
                    '--bootstrap-admin-url', self.url,
                    '--bootstrap-internal-url', self.url,
                    '--bootstrap-public-url', self.url)

    def port_free(self):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(('127.0.0.1', self.port))
            return True
        except OSError:
            return False
        finally:
            s.close()

    def start_server(self, timeout=60):
        if not self.port_free():
            raise FixtureError('port %d on 127.0.0.1 is already in use' % self.port)
        py = os.path.join(KEYSTONE_VENV, 'bin', 'python')
        kind = self.server_kind
        gunicorn = os.path.join(KEYSTONE_VENV, 'bin', 'gunicorn')
        if kind == 'auto':
            kind = 'gunicorn' if os.access(gunicorn, os.X_OK) else 'werkzeug'
        env = self.clean_env()
        env['OS_KEYSTONE_CONFIG_FILES'] = self.conf
        env['KEYSTONE_SOURCE_CONFIG'] = self.conf
        if self.is_sqlite:
            env['KEYSTONE_SOURCE_SQLITE_FK'] = '1'
        here = os.path.dirname(os.path.abspath(__file__))
        if kind == 'gunicorn':
            cmd = [gunicorn, '--bind', '127.0.0.1:%d' % self.port,
                   '--workers', '1', '--worker-class', 'sync',
                   '--timeout', '120', '--name', 'keystone-import-source',
                   '--no-control-socket', '--pythonpath', here,
                   'keystone_source:wsgi_application']
        else:
            cmd = [py, os.path.abspath(__file__), '--serve',
                   '--config', self.conf, '--port', str(self.port)]
        log('starting keystone (%s) on %s' % (kind, self.url))
        self.server_desc = kind
        lf = open(self.log_path, 'ab')
        self.server = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=lf, stderr=lf, env=env,
            start_new_session=True,
            # without --keep-running the server must not outlive this script,
            # even if it is killed hard: ask the kernel for SIGTERM then.
            preexec_fn=None if self.keep_running else _die_with_parent)
        lf.close()
        with open(os.path.join(self.out, 'keystone.pid'), 'w') as f:
            f.write('%d\n' % self.server.pid)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.server.poll() is not None:
                raise FixtureError('keystone server exited with %s; see %s'
                                   % (self.server.returncode, self.log_path))
            try:
                with OPENER.open(self.url, timeout=3) as r:
                    if r.status == 200:
                        log('keystone answers GET /v3')
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        raise FixtureError('keystone did not answer GET %s within %d s'
                           % (self.url, timeout))

    def stop_server(self):
        if self.server is not None and self.server.poll() is None:
            log('stopping keystone (pid %d)' % self.server.pid)
            _stop_pid(self.server.pid)
            try:
                self.server.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            try:
                os.unlink(os.path.join(self.out, 'keystone.pid'))
            except OSError:
                pass
        self.server = None

    # ---- HTTP -----------------------------------------------------------
    def http(self, method, path, body=None, headers=None, expect=(200,),
             raw=False):
        want_raw = raw
        url = path if path.startswith('http') else self.url + path
        data = None
        hdrs = {'Accept': 'application/json'}
        if body is not None:
            data = json.dumps(body).encode()
            hdrs['Content-Type'] = 'application/json'
        hdrs.update(headers or {})
        req = urllib.request.Request(url, data=data, method=method, headers=hdrs)
        try:
            with OPENER.open(req, timeout=60) as r:
                status, rh, raw = r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            status, rh, raw = e.code, e.headers, e.read()
        if want_raw:
            payload = raw.decode(errors='replace')
        else:
            try:
                payload = json.loads(raw) if raw else None
            except ValueError:
                payload = raw.decode(errors='replace')
        if expect is not None and status not in expect:
            raise FixtureError('%s %s -> %d (wanted %s): %s' % (
                method, path, status, expect, str(payload)[:2000]))
        return status, rh, payload

    def get(self, path):
        return self.http('GET', path, headers={
            'X-Auth-Token': self.read_token or self.admin_token})[2]

    @staticmethod
    def password_auth(user_id, password, scope=None):
        body = {'auth': {'identity': {'methods': ['password'], 'password': {
            'user': {'id': user_id, 'password': password}}}}}
        if scope is not None:
            body['auth']['scope'] = scope
        return body

    def issue(self, body, headers=None, expect=(201,)):
        status, rh, payload = self.http('POST', '/auth/tokens', body,
                                        headers=headers, expect=expect)
        return status, rh.get('X-Subject-Token'), rh, payload

    # ---- openstackclient ------------------------------------------------
    def osc_env(self, user=None, password=None, project_id=None):
        env = self.clean_env()
        env.update({
            'OS_AUTH_URL': self.url,
            'OS_IDENTITY_API_VERSION': '3',
            'OS_INTERFACE': 'public',
            'OS_AUTH_TYPE': 'password',
        })
        if user is None:
            env.update({'OS_USERNAME': 'admin', 'OS_PASSWORD': ADMIN_PASSWORD,
                        'OS_USER_DOMAIN_NAME': 'Default',
                        'OS_PROJECT_NAME': 'admin',
                        'OS_PROJECT_DOMAIN_NAME': 'Default'})
        else:
            env.update({'OS_USER_ID': user, 'OS_PASSWORD': password})
            if project_id:
                env['OS_PROJECT_ID'] = project_id
        return env

    def osc(self, *args, env=None, fmt=True):
        cmd = [os.path.join(OSC_VENV, 'bin', 'openstack')] + list(args)
        if fmt:
            cmd += ['-f', 'json']
        shown = ' '.join(args)
        log('openstack ' + shown[:160])
        try:
            p = subprocess.run(cmd, stdin=subprocess.DEVNULL,
                               capture_output=True, text=True,
                               timeout=OSC_TIMEOUT, env=env or self.osc_env())
        except subprocess.TimeoutExpired:
            raise FixtureError('openstack %s timed out' % shown)
        if p.returncode != 0:
            raise FixtureError('openstack %s failed (exit %d): %s' % (
                shown, p.returncode, (p.stderr or p.stdout)[-3000:]))
        if fmt:
            try:
                out = json.loads(p.stdout) if p.stdout.strip() else None
            except ValueError:
                raise FixtureError('openstack %s printed no JSON: %r'
                                   % (shown, p.stdout[:500]))
            if isinstance(out, dict):
                # some OSC commands print "ID", "Project ID", ...: make the
                # keys uniform (id, project_id, ...)
                out = {k.lower().replace(' ', '_'): v for k, v in out.items()}
            return out
        return p.stdout

    def write_file(self, name, obj):
        path = os.path.join(self.out, 'inputs', name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            json.dump(obj, f, indent=2)
        return path

    # ---- population -----------------------------------------------------
    def user(self, name, password, domain, state='ok', extra_args=()):
        u = self.osc('user', 'create', '--domain', domain, '--password',
                     password, *extra_args, name)
        self.ids['user:' + name] = u['id']
        self.users[name] = {'id': u['id'], 'name': name,
                            'domain_id': u['domain_id'], 'password': password,
                            'old_passwords': [], 'state': state}
        return u['id']

    def par(self, *fns):
        """Run independent steps side by side (OSC start-up is CPU bound and
        the server answers one request at a time, so 3 is plenty)."""
        from concurrent.futures import ThreadPoolExecutor
        pool = ThreadPoolExecutor(max_workers=3)
        try:
            futures = [pool.submit(fn) for fn in fns]
            return [f.result() for f in futures]
        finally:
            # on failure don't wait for the others: stopping keystone
            # (main's finally) makes them fail fast
            pool.shutdown(wait=False, cancel_futures=True)

    def populate(self):
        I = self.ids
        adm = self.get('/users?name=admin')['users'][0]
        I['user:admin'] = adm['id']
        self.users['admin'] = {'id': adm['id'], 'name': 'admin',
                               'domain_id': adm['domain_id'],
                               'password': ADMIN_PASSWORD, 'old_passwords': [],
                               'state': 'ok'}
        I['project:admin'] = self.get('/projects?name=admin')['projects'][0]['id']
        for r in self.get('/roles')['roles']:
            I['role:' + r['name']] = r['id']

        def make(key, *args, **kw):
            def step():
                I[key] = self.osc(*args, **kw)['id']
                return I[key]
            return step

        def run(*args, **kw):
            return lambda: self.osc(*args, fmt=False, **kw)

        def chain(*fns):
            return lambda: [fn() for fn in fns]

        # -- domains and projects ----------------------------------------
        # oldco is created enabled, populated, and disabled at the end
        # (keystone refuses new projects under a disabled domain).
        self.par(make('domain:acme', 'domain', 'create', '--description',
                      'ACME corporation', 'acme'),
                 make('domain:oldco', 'domain', 'create', '--description',
                      'former company', 'oldco'))
        acme, oldco = I['domain:acme'], I['domain:oldco']
        self.par(
            chain(make('project:parent', 'project', 'create', '--domain', acme,
                       '--description', 'top of the tree', '--tag', 'tier-1',
                       '--tag', 'billing', '--property', 'cost_center=CC-100',
                       'acme-parent'),
                  lambda: make('project:child', 'project', 'create',
                               '--domain', acme, '--parent',
                               I['project:parent'], '--tag', 'tier-2',
                               'acme-child')(),
                  lambda: make('project:grandchild', 'project', 'create',
                               '--domain', acme, '--parent',
                               I['project:child'], '--tag', 'tier-3', '--tag',
                               'leaf', 'acme-grandchild')()),
            make('project:app', 'project', 'create', '--domain', acme,
                 '--description', 'application project', 'acme-app'),
            make('project:vault', 'project', 'create', '--domain', acme,
                 '--immutable', 'acme-vault'),
            make('project:disabled', 'project', 'create', '--domain', acme,
                 '--disable', 'acme-frozen'),
            make('project:legacy', 'project', 'create', '--domain', oldco,
                 'legacy'),
            # -- roles -----------------------------------------------------
            make('role:supervisor', 'role', 'create', '--description',
                 'supervises workers', 'supervisor'),
            make('role:worker', 'role', 'create', 'worker'),
            make('role:auditor', 'role', 'create', '--immutable', 'auditor'),
            make('role:acme-operator', 'role', 'create', '--domain', acme,
                 'acme-operator'),
        )
        # a domain-specific role implying a global one. OSC cannot do this
        # one: it looks the prior role up without its domain and finds
        # nothing ("Could not find role: None"), so it goes to the API.
        self.http('PUT', '/roles/%s/implies/%s' % (I['role:acme-operator'],
                                                   I['role:member']),
                  headers={'X-Auth-Token': self.admin_token}, expect=(201,))

        # -- users -------------------------------------------------------
        def user(name, password, domain, state='ok', extra_args=()):
            return lambda: self.user(name, password, domain, state, extra_args)

        def alice_history():
            # created with one password, changed twice by the admin: keystone
            # keeps all three rows (unique_last_password_count = 3)
            self.user('alice', 'alice-pass-1', acme, extra_args=(
                '--email', 'alice@acme.example', '--description',
                'history user', '--project', I['project:child']))
            self.osc('user', 'set', '--password', 'alice-pass-2',
                     I['user:alice'], fmt=False)
            self.osc('user', 'set', '--password', 'alice-pass-3',
                     I['user:alice'], fmt=False)
            self.users['alice']['password'] = 'alice-pass-3'
            self.users['alice']['old_passwords'] = ['alice-pass-1',
                                                    'alice-pass-2']

        self.par(
            alice_history,
            user('bob', 'bob-pass', acme, state='locked'),
            user('eve', 'eve-pass', acme, state='expired'),
            user('mallory', 'mallory-pass', acme, state='mfa', extra_args=(
                '--multi-factor-auth-rule', 'password,totp',
                '--multi-factor-auth-rule', 'mapped,totp',
                '--enable-multi-factor-auth')),
            user('ivan', 'ivan-pass', acme, extra_args=(
                '--ignore-lockout-failure-attempts',
                '--ignore-password-expiry')),
            user('carol', 'carol-pass', acme),          # app credentials
            user('trudy', 'trudy-pass', acme),          # trustor
            user('trent', 'trent-pass', acme),          # trustee
            user('sam', 'sam-pass', 'default'),         # system reader
            user('dan', 'dan-pass', acme, state='disabled',
                 extra_args=('--disable',)),
            user('olga', 'olga-pass', oldco, state='domain_disabled'),
            user('lara', 'lara-pass', 'default', extra_args=(
                '--enable-lock-password',
                '--ignore-change-password-upon-first-use')),
            # -- groups ----------------------------------------------------
            make('group:devs', 'group', 'create', '--domain', acme,
                 '--description', 'developers', 'devs'),
            make('group:ops', 'group', 'create', '--domain', acme, 'ops'),
            make('group:auditors', 'group', 'create', '--domain', 'default',
                 'auditors'),
            make('group:empty', 'group', 'create', '--domain', oldco,
                 'nobody'),
        )

        # -- memberships and grants ----------------------------------------
        def grant(role, *target):
            return run('role', 'add', *target, role)

        self.par(
            run('group', 'add', 'user', I['group:devs'], I['user:alice'],
                I['user:carol']),
            run('group', 'add', 'user', I['group:ops'], I['user:trent'],
                I['user:ivan']),
            run('group', 'add', 'user', I['group:auditors'], I['user:sam']),
            grant(I['role:member'], '--project', I['project:app'], '--user', I['user:carol']),
            grant(I['role:supervisor'], '--project', I['project:app'], '--user', I['user:carol']),
            grant(I['role:member'], '--project', I['project:parent'], '--user', I['user:trudy']),
            grant(I['role:member'], '--project', I['project:parent'], '--user', I['user:mallory']),
            grant(I['role:member'], '--project', I['project:parent'], '--user', I['user:eve']),
            grant(I['role:member'], '--project', I['project:parent'], '--user', I['user:bob']),
            grant(I['role:member'], '--project', I['project:parent'], '--user', I['user:ivan']),
            grant(I['role:member'], '--project', I['project:parent'], '--user', I['user:dan']),
            grant(I['role:member'], '--project', I['project:legacy'], '--user', I['user:olga']),
            grant(I['role:member'], '--project', I['project:vault'], '--user', I['user:lara']),
            grant(I['role:reader'], '--project', I['project:child'], '--group', I['group:devs']),
            grant(I['role:member'], '--domain', acme, '--user', I['user:alice']),
            grant(I['role:reader'], '--domain', acme, '--group', I['group:ops']),
            # inherited: on a domain (all its projects), on a project (subtree)
            grant(I['role:worker'], '--domain', acme, '--user', I['user:ivan'],
                  '--inherited'),
            grant(I['role:member'], '--project', I['project:parent'], '--group',
                  I['group:devs'], '--inherited'),
            # a domain-specific role on a project of its domain
            grant(I['role:acme-operator'], '--project', I['project:child'],
                  '--user', I['user:alice']),
            # system grants
            grant(I['role:reader'], '--system', 'all', '--user', I['user:sam']),
            grant(I['role:auditor'], '--system', 'all', '--group',
                  I['group:auditors']),
            run('implied', 'role', 'create', '--implied-role',
                I['role:worker'], I['role:supervisor']),
        )

        # -- catalog, policy, oauth1 consumer -------------------------------
        def consumer():
            # OSC refuses ("To use 'consumers' oauthlib must be installed":
            # its venv has no oauthlib), so the API it is.
            c = self.http('POST', '/OS-OAUTH1/consumers',
                          {'consumer': {'description': 'oauth1 test consumer'}},
                          headers={'X-Auth-Token': self.admin_token},
                          expect=(201,))[2]['consumer']
            I['consumer'] = c['id']
            self.extra['consumers'] = [{'id': c['id'], 'secret': c['secret']}]

        def policy():
            pol = self.write_file('policy.json', {'compute:get': 'role:reader'})
            make('policy:compute', 'policy', 'create', '--type',
                 'application/json', pol)()

        self.par(
            chain(run('region', 'create', '--parent-region', 'RegionOne',
                      '--description', 'child of RegionOne', 'RegionTwo'),
                  run('region', 'create', '--parent-region', 'RegionTwo',
                      'RegionThree')),
            make('service:nova', 'service', 'create', '--name', 'nova',
                 '--description', 'Compute', 'compute'),
            make('service:glance', 'service', 'create', '--name', 'glance',
                 'image'),
            policy,
            consumer,
        )
        steps = []
        for svc, region, port in (('nova', 'RegionOne', 8774),
                                  ('glance', 'RegionTwo', 9292)):
            for iface in ('public', 'internal', 'admin'):
                steps.append(make(
                    'endpoint:%s:%s' % (svc, iface), 'endpoint', 'create',
                    '--region', region, I['service:' + svc], iface,
                    'http://127.0.0.1:%d/%s/%s' % (port, svc, iface)))
        steps.append(make('endpoint:glance:disabled', 'endpoint', 'create',
                          '--region', 'RegionThree', '--disable',
                          I['service:glance'], 'public',
                          'http://127.0.0.1:9393/glance'))
        eg_filter = self.write_file('endpoint-group-filter.json', {
            'service_id': I['service:nova'], 'interface': 'public'})
        steps.append(make('endpoint_group:nova-public', 'endpoint', 'group',
                          'create', '--description', 'public compute endpoints',
                          'nova-public', eg_filter))
        steps.append(make('registered_limit:cores', 'registered', 'limit',
                          'create', '--service', I['service:nova'], '--region',
                          'RegionOne', '--default-limit', '20',
                          '--description', 'default cores', 'cores'))
        self.par(*steps)
        # endpoint-policy association: OSC has no command for it
        self.http('PUT', '/policies/%s/OS-ENDPOINT-POLICY/endpoints/%s' % (
            I['policy:compute'], I['endpoint:nova:public']),
            headers={'X-Auth-Token': self.admin_token}, expect=(204,))

        # -- credentials, app credentials, trusts, federation ---------------
        self.extra['ec2'] = []

        def ec2(user, project):
            def step():
                c = self.osc('ec2', 'credentials', 'create', '--project',
                             I['project:' + project], '--user', I['user:' + user])
                self.extra['ec2'].append({
                    'access': c['access'], 'secret': c['secret'],
                    'user_id': I['user:' + user],
                    'project_id': I['project:' + project]})
            return step

        expires = (datetime.datetime.now(datetime.timezone.utc)
                   + datetime.timedelta(days=30)).strftime('%Y-%m-%dT%H:%M:%S')

        def app_creds():
            # made by their owner (keystone lets only the owner create them)
            env = self.osc_env(I['user:carol'], 'carol-pass', I['project:app'])
            ac1 = self.osc('application', 'credential', 'create',
                           '--unrestricted', '--role', I['role:member'],
                           '--role', I['role:reader'], '--description',
                           'unrestricted, explicit roles',
                           'carol-unrestricted', env=env)
            rules = json.dumps([
                {'service': 'identity', 'method': 'GET',
                 'path': '/v3/users/*'},
                {'service': 'compute', 'method': 'POST',
                 'path': '/v2.1/servers'}])
            ac2 = self.osc('application', 'credential', 'create', '--role',
                           I['role:member'], '--access-rules', rules,
                           '--expiration', expires, 'carol-access-rules',
                           env=env)
            I['app_cred:unrestricted'] = ac1['id']
            I['app_cred:access_rules'] = ac2['id']
            self.extra['application_credentials'] = [
                {'id': ac['id'], 'user_id': I['user:carol'],
                 'name': ac['name'], 'secret': ac['secret']}
                for ac in (ac1, ac2)]

        def trusts():
            # made by the trustor, scoped to the trust's project
            env = self.osc_env(I['user:trudy'], 'trudy-pass',
                               I['project:parent'])
            I['trust:impersonate'] = self.osc(
                'trust', 'create', '--project', I['project:parent'], '--role',
                I['role:member'], '--impersonate', I['user:trudy'],
                I['user:trent'], env=env)['id']
            I['trust:plain'] = self.osc(
                'trust', 'create', '--project', I['project:parent'], '--role',
                I['role:reader'], '--expiration', expires, I['user:trudy'],
                I['user:trent'], env=env)['id']

        def federation():
            make('idp', 'identity', 'provider', 'create', '--remote-id',
                 IDP_REMOTE_ID, '--domain', acme, '--authorization-ttl', '60',
                 '--description', 'ACME SAML IdP', 'acme-idp')()
            # The assertion's attributes come from the WSGI environ; with no
            # Apache module in front, the client's X-Remote-* headers are
            # what arrives (as HTTP_X_REMOTE_*).
            rules = self.write_file('mapping-rules.json', [
                {'local': [{'user': {'name': '{0}'}},
                           {'group': {'id': I['group:devs']}}],
                 'remote': [{'type': 'HTTP_X_REMOTE_USER'},
                            {'type': 'HTTP_X_REMOTE_GROUPS',
                             'any_one_of': ['devs']}]},
                {'local': [{'user': {'name': '{0}'}}],
                 'remote': [{'type': 'HTTP_X_REMOTE_USER'},
                            {'type': 'HTTP_X_REMOTE_GROUPS',
                             'not_any_of': ['devs']}]}])
            make('mapping', 'mapping', 'create', '--rules', rules,
                 'acme-mapping')()
            make('protocol', 'federation', 'protocol', 'create',
                 '--identity-provider', I['idp'], '--mapping', I['mapping'],
                 'saml2')()

        self.par(
            run('endpoint', 'group', 'add', 'project',
                I['endpoint_group:nova-public'], I['project:child']),
            run('endpoint', 'add', 'project', I['endpoint:glance:public'],
                I['project:child']),
            make('limit:cores', 'limit', 'create', '--project',
                 I['project:app'], '--service', I['service:nova'], '--region',
                 'RegionOne', '--resource-limit', '8', 'cores'),
            ec2('alice', 'child'),
            ec2('carol', 'app'),
            make('credential:cert', 'credential', 'create', '--type', 'cert',
                 '--project', I['project:app'], I['user:carol'],
                 '-----BEGIN CERTIFICATE-----\nMIIBfixture\n'
                 '-----END CERTIFICATE-----'),
            make('credential:totp', 'credential', 'create', '--type', 'totp',
                 I['user:mallory'], TOTP_SECRET),
            app_creds,
            trusts,
            federation,
            make('service_provider', 'service', 'provider', 'create',
                 '--auth-url', 'https://sp.acme.example/v3/OS-FEDERATION/'
                 'identity_providers/acme-idp/protocols/saml2/auth',
                 '--service-provider-url',
                 'https://sp.acme.example/Shibboleth.sso/SAML2/ECP',
                 '--description', 'remote cloud', 'acme-sp'),
        )
        self.extra['ec2'].sort(key=lambda c: c['access'])

        # -- account states --------------------------------------------------
        self.lock_bob()
        self.expire_eve()
        self.domain_config()
        self.exercise_ivan()
        self.osc('domain', 'set', '--disable', oldco, fmt=False)

    def lock_bob(self):
        uid = self.ids['user:bob']
        for i in range(3):
            self.issue(self.password_auth(uid, 'wrong-%d' % i), expect=(401,))
        # keystone now refuses even the right password
        self.issue(self.password_auth(uid, 'bob-pass'), expect=(401,))
        log('bob is locked out')

    def expire_eve(self):
        # Keystone has no API to expire a password at a chosen time (only
        # [security_compliance] password_expires_days, global): set the
        # password row's expiry in the past directly in the database. Both the
        # old datetime column and the integer microseconds column that
        # keystone actually reads are set.
        import sqlalchemy
        past = datetime.datetime.now(datetime.timezone.utc).replace(
            microsecond=0) - datetime.timedelta(days=2)
        past_int = int(past.timestamp()) * 1000000
        engine = sqlalchemy.create_engine(self.db_url)
        with engine.begin() as c:
            n = c.execute(sqlalchemy.text(
                'UPDATE password SET expires_at = :dt, expires_at_int = :di '
                'WHERE local_user_id = (SELECT id FROM local_user '
                'WHERE user_id = :uid)'),
                # text in keystone's own DateTime format, microseconds too
                {'dt': past.strftime('%Y-%m-%d %H:%M:%S.%f'), 'di': past_int,
                 'uid': self.ids['user:eve']}).rowcount
        engine.dispose()
        if n != 1:
            raise FixtureError('expected one password row for eve, got %d' % n)
        self.extra['expired_password_expires_at'] = past.strftime(
            '%Y-%m-%dT%H:%M:%S.000000')
        body = self.issue(self.password_auth(self.ids['user:eve'], 'eve-pass'),
                          expect=(401,))[3]
        log('eve has an expired password: %s' % str(body)[:120])

    def domain_config(self):
        # acme's LDAP settings as `keystone-manage domain_config_upload`
        # stores them (whitelisted_config and sensitive_config rows, values
        # JSON-encoded). Written directly: Keystone's API serves domain
        # configurations only with domain-specific drivers on, which would
        # then connect to the LDAP server named here.
        import sqlalchemy
        acme = self.ids['domain:acme']
        shown = {('identity', 'driver'): 'ldap',
                 ('ldap', 'url'): 'ldap://ldap.acme.example',
                 ('ldap', 'user'): 'cn=keystone,dc=acme,dc=example',
                 ('ldap', 'suffix'): 'dc=acme,dc=example'}
        secret = {('ldap', 'password'): 'ldap-bind-secret'}
        engine = sqlalchemy.create_engine(self.db_url)
        with engine.begin() as c:
            for table, rows in (('whitelisted_config', shown),
                                ('sensitive_config', secret)):
                for (group, option), value in rows.items():
                    c.execute(sqlalchemy.text(
                        'INSERT INTO %s (domain_id, "group", option, value) '
                        'VALUES (:d, :g, :o, :v)' % table if self.is_sqlite
                        else 'INSERT INTO %s (domain_id, `group`, `option`, '
                        'value) VALUES (:d, :g, :o, :v)' % table),
                        {'d': acme, 'g': group, 'o': option,
                         'v': json.dumps(value)})
        engine.dispose()
        config = {}
        for (group, option), value in shown.items():
            config.setdefault(group, {})[option] = value
        self.extra['domain_config'] = {'domain_id': acme, 'config': config,
                                       'sensitive': secret[('ldap', 'password')]}

    def exercise_ivan(self):
        uid = self.ids['user:ivan']
        for i in range(4):
            self.issue(self.password_auth(uid, 'nope-%d' % i), expect=(401,))
        self.issue(self.password_auth(uid, 'ivan-pass'))
        log('ivan ignores lockout: 4 failures, then logged in')

    # ---- tokens ----------------------------------------------------------
    def admin_login(self):
        _, tok, _, _ = self.issue({'auth': {
            'identity': {'methods': ['password'], 'password': {'user': {
                'name': 'admin', 'domain': {'id': 'default'},
                'password': ADMIN_PASSWORD}}},
            'scope': {'project': {'name': 'admin',
                                  'domain': {'id': 'default'}}}}})
        self.admin_token = tok

    def validate(self, token, access_rules_header=True):
        # keystonemiddleware says it understands access rules with this
        # header; without it keystone answers 404 for a token from an
        # application credential that has access rules.
        headers = {'X-Auth-Token': self.admin_token, 'X-Subject-Token': token}
        if access_rules_header:
            headers['OpenStack-Identity-Access-Rules'] = '1'
        status, _, body = self.http('GET', '/auth/tokens', headers=headers,
                                    expect=(200, 404))
        return status, body

    def record(self, kind, token, key_note, **more):
        status, body = self.validate(token)
        if status != 200:
            raise FixtureError('fresh %s token does not validate: %s'
                               % (kind, body))
        entry = {'kind': kind, 'token': token, 'validation': body,
                 'fernet_primary_key_at_issue': key_note}
        entry.update(more)
        self.tokens.append(entry)
        log('token %s issued and validated' % kind)

    def primary_key(self):
        keys = sorted(int(k) for k in os.listdir(
            os.path.join(self.out, 'fernet-keys')) if k.isdigit())
        return keys[-1]

    def issue_tokens(self):
        I = self.ids
        # revocation events (password changes, domain disable) are matched
        # at one-second granularity; keep clear of them.
        time.sleep(1.2)
        self.admin_login()
        k = self.primary_key()
        # --- made with the first primary key; it becomes secondary below
        _, t, _, _ = self.issue(self.password_auth(I['user:alice'], 'alice-pass-3'))
        self.record('unscoped', t, k, user='alice')
        _, t, _, _ = self.issue(self.password_auth(
            I['user:alice'], 'alice-pass-3',
            {'project': {'id': I['project:child']}}))
        self.record('project_before_rotation', t, k, user='alice')
        _, t, _, _ = self.issue(self.password_auth(
            I['user:alice'], 'alice-pass-3',
            {'project': {'id': I['project:grandchild']}}))
        status, body = self.validate(t)
        if status != 200:
            raise FixtureError('token to revoke does not validate')
        self.http('DELETE', '/auth/tokens', headers={
            'X-Auth-Token': self.admin_token, 'X-Subject-Token': t},
            expect=(204,))
        status, body = self.validate(t)
        if status != 404:
            raise FixtureError('revoked token still validates (%d)' % status)
        self.revoked.append(t)
        self.extra['revoked_token_details'] = [{
            'token': t, 'user': 'alice', 'project_id': I['project:grandchild'],
            'validation_after_revoke_status': status,
            'validation_after_revoke': body}]
        log('revoked one project token')

        self.manage('fernet_rotate', *self.key_owner())
        k2 = self.primary_key()
        if k2 == k:
            raise FixtureError('fernet_rotate did not make a new primary key')
        # the admin token was made with the old primary: still fine
        self.record('admin_project', self.admin_token, k, user='admin')
        # --- made with the new primary key
        _, t, _, _ = self.issue(self.password_auth(
            I['user:alice'], 'alice-pass-3', {'project': {'id': I['project:child']}}))
        self.record('project', t, k2, user='alice')
        _, t, _, _ = self.issue(self.password_auth(
            I['user:alice'], 'alice-pass-3', {'domain': {'id': I['domain:acme']}}))
        self.record('domain', t, k2, user='alice')
        _, t, _, _ = self.issue(self.password_auth(
            I['user:admin'], ADMIN_PASSWORD, {'system': {'all': True}}))
        self.record('system', t, k2, user='admin')
        _, t, _, _ = self.issue(self.password_auth(
            I['user:sam'], 'sam-pass', {'system': {'all': True}}))
        self.record('system_reader', t, k2, user='sam')
        for ac in self.extra['application_credentials']:
            _, t, _, _ = self.issue({'auth': {'identity': {
                'methods': ['application_credential'],
                'application_credential': {'id': ac['id'],
                                           'secret': ac['secret']}}}})
            kind = ('application_credential'
                    if ac['id'] == I['app_cred:unrestricted']
                    else 'application_credential_access_rules')
            plain_status = self.validate(t, access_rules_header=False)[0]
            self.record(kind, t, k2, user='carol',
                        application_credential_id=ac['id'],
                        validation_status_without_access_rules_header=plain_status)
        for trust, kind in ((I['trust:impersonate'], 'trust'),
                            (I['trust:plain'], 'trust_no_impersonation')):
            _, t, _, _ = self.issue(self.password_auth(
                I['user:trent'], 'trent-pass', {'OS-TRUST:trust': {'id': trust}}))
            self.record(kind, t, k2, user='trent', trust_id=trust)
        # MFA: password alone gives 401 and a receipt; totp completes it
        st, _, rh, body = self.issue(self.password_auth(
            I['user:mallory'], 'mallory-pass',
            {'project': {'id': I['project:parent']}}), expect=(401,))
        receipt = rh.get('Openstack-Auth-Receipt')
        if not receipt:
            raise FixtureError('MFA user got 401 without a receipt: %s' % body)
        self.extra['mfa_receipt'] = {'receipt': receipt, 'body': body}
        _, t, _, _ = self.issue({'auth': {
            'identity': {'methods': ['totp'], 'totp': {'user': {
                'id': I['user:mallory'], 'passcode': totp_now(TOTP_SECRET)}}},
            'scope': {'project': {'id': I['project:parent']}}}},
            headers={'Openstack-Auth-Receipt': receipt})
        self.record('mfa', t, k2, user='mallory')
        self.federated_tokens(k2)
        self.oauth1_flow(k2)

    def federated_tokens(self, key):
        I = self.ids
        # first federated login creates the shadow user (user +
        # federated_user rows) and its expiring membership in devs
        st, rh, body = self.http(
            'POST', '/OS-FEDERATION/identity_providers/%s/protocols/%s/auth'
            % (I['idp'], I['protocol']), headers={
                'X-IDP-Remote-ID': IDP_REMOTE_ID,
                'X-Remote-User': 'fiona', 'X-Remote-Groups': 'devs'},
            expect=(201,))
        t = rh.get('X-Subject-Token')
        fed_user = body['token']['user']
        I['user:fiona'] = fed_user['id']
        self.users['fiona'] = {
            'id': fed_user['id'], 'name': 'fiona',
            'domain_id': fed_user['domain']['id'], 'password': None,
            'old_passwords': [], 'state': 'federated',
            'federation': {'identity_provider': I['idp'],
                           'protocol': I['protocol'], 'unique_id': 'fiona',
                           'remote_id': IDP_REMOTE_ID,
                           'headers': {'X-Remote-User': 'fiona',
                                       'X-Remote-Groups': 'devs'}}}
        self.record('federated_unscoped', t, key, user='fiona')
        _, t2, _, _ = self.issue({'auth': {
            'identity': {'methods': ['token'], 'token': {'id': t}},
            'scope': {'project': {'id': I['project:child']}}}})
        self.record('federated_project', t2, key, user='fiona')

    def oauth1_flow(self, key):
        # OAuth1 (keystone's OS-OAUTH1): request token -> authorised by
        # the admin (keystone's policy: admin only, project-scoped) on the
        # admin project -> access token -> keystone token. Signed with
        # oauthlib, which keystone itself depends on.
        from urllib.parse import parse_qs
        from oauthlib import oauth1
        I = self.ids
        cons = self.extra['consumers'][0]

        def signed_post(path, extra_headers=None, **client_kw):
            client = oauth1.Client(cons['id'], client_secret=cons['secret'],
                                   signature_method=oauth1.SIGNATURE_HMAC,
                                   **client_kw)
            _, headers, _ = client.sign(self.url + path, http_method='POST')
            headers.update(extra_headers or {})
            return headers

        h = signed_post('/OS-OAUTH1/request_token',
                        {'Requested-Project-Id': I['project:admin']},
                        callback_uri='oob')
        body = self.http('POST', '/OS-OAUTH1/request_token', headers=h,
                         expect=(201,), raw=True)[2]
        rt = {k: v[0] for k, v in parse_qs(body).items()}
        verifier = self.http(
            'PUT', '/OS-OAUTH1/authorize/%s' % rt['oauth_token'],
            {'roles': [{'id': I['role:member']}]},
            headers={'X-Auth-Token': self.admin_token})[2]['token'][
            'oauth_verifier']
        h = signed_post('/OS-OAUTH1/access_token',
                        resource_owner_key=rt['oauth_token'],
                        resource_owner_secret=rt['oauth_token_secret'],
                        verifier=verifier)
        body = self.http('POST', '/OS-OAUTH1/access_token', headers=h,
                         expect=(201,), raw=True)[2]
        at = {k: v[0] for k, v in parse_qs(body).items()}
        h = signed_post('/auth/tokens', resource_owner_key=at['oauth_token'],
                        resource_owner_secret=at['oauth_token_secret'])
        _, t, _, _ = self.issue({'auth': {'identity': {
            'methods': ['oauth1'], 'oauth1': {}}}}, headers=h)
        self.extra['oauth1'] = {
            'consumer_id': cons['id'], 'consumer_secret': cons['secret'],
            'request_token': rt, 'verifier': verifier,
            'access_token': at, 'authorizing_user_id': I['user:admin'],
            'project_id': I['project:admin'], 'role_ids': [I['role:member']]}
        self.record('oauth1', t, key, user='admin',
                    oauth1_access_token_id=at['oauth_token'])

    def check_states(self):
        """Every user's state as Keystone sees it now, by logging in."""
        for name, u in self.users.items():
            if u['password'] is None:    # federated: no password login
                u['login_status'] = u['login_error'] = None
                continue
            st, tok, rh, body = self.issue(
                self.password_auth(u['id'], u['password']), expect=(201, 401))
            want = 201 if u['state'] == 'ok' else 401
            if st != want:
                raise FixtureError('user %s (%s): login gave %d: %s'
                                   % (name, u['state'], st, body))
            if u['state'] == 'mfa' and not rh.get('Openstack-Auth-Receipt'):
                raise FixtureError('mfa user got no receipt')
            u['login_status'] = st
            u['login_error'] = None if st == 201 else body

    # ---- recording ---------------------------------------------------------
    def collect(self):
        I = self.ids
        ex = self.extra
        api = {}
        # system scope: some reads (access rules) are for system readers only
        self.read_token = self.issue(self.password_auth(
            I['user:admin'], ADMIN_PASSWORD, {'system': {'all': True}}))[1]

        def lst(path, key):
            return sorted(self.get(path)[key], key=lambda x: x['id'])

        api['domains'] = lst('/domains', 'domains')
        api['projects'] = lst('/projects', 'projects')
        api['users'] = lst('/users', 'users')
        api['groups'] = lst('/groups', 'groups')
        roles = self.get('/roles')['roles']
        for d in api['domains']:
            roles += self.get('/roles?domain_id=%s' % d['id'])['roles']
        api['roles'] = sorted(roles, key=lambda x: x['id'])
        api['regions'] = lst('/regions', 'regions')
        api['services'] = lst('/services', 'services')
        api['endpoints'] = lst('/endpoints', 'endpoints')
        api['endpoint_groups'] = lst('/OS-EP-FILTER/endpoint_groups',
                                     'endpoint_groups')
        api['policies'] = lst('/policies', 'policies')
        api['credentials'] = lst('/credentials', 'credentials')
        acs, rules = [], []
        for u in api['users']:
            acs += self.get('/users/%s/application_credentials'
                            % u['id'])['application_credentials']
            rules += self.get('/users/%s/access_rules' % u['id'])['access_rules']
        api['application_credentials'] = sorted(acs, key=lambda x: x['id'])
        api['access_rules'] = sorted(rules, key=lambda x: x['id'])
        api['trusts'] = lst('/OS-TRUST/trusts', 'trusts')
        api['identity_providers'] = lst('/OS-FEDERATION/identity_providers',
                                        'identity_providers')
        api['mappings'] = lst('/OS-FEDERATION/mappings', 'mappings')
        api['federation_protocols'] = sorted(self.get(
            '/OS-FEDERATION/identity_providers/%s/protocols' % I['idp'])[
            'protocols'], key=lambda x: x['id'])
        api['service_providers'] = lst('/OS-FEDERATION/service_providers',
                                       'service_providers')
        api['registered_limits'] = lst('/registered_limits', 'registered_limits')
        api['limits'] = lst('/limits', 'limits')
        api['consumers'] = lst('/OS-OAUTH1/consumers', 'consumers')
        api['role_inferences'] = self.get('/role_inferences')['role_inferences']
        api['project_tags'] = {p['id']: sorted(self.get(
            '/projects/%s/tags' % p['id'])['tags']) for p in api['projects']}
        api['group_members'] = {g['id']: sorted(
            u['id'] for u in self.get('/groups/%s/users' % g['id'])['users'])
            for g in api['groups']}
        api['project_endpoints'] = {p: sorted(e['id'] for e in self.get(
            '/OS-EP-FILTER/projects/%s/endpoints' % p)['endpoints'])
            for p in (I['project:child'], I['project:app'])}
        api['endpoint_group_projects'] = {
            I['endpoint_group:nova-public']: sorted(p['id'] for p in self.get(
                '/OS-EP-FILTER/endpoint_groups/%s/projects'
                % I['endpoint_group:nova-public'])['projects'])}
        api['trust_roles'] = {t['id']: sorted(r['id'] for r in self.get(
            '/OS-TRUST/trusts/%s/roles' % t['id'])['roles'])
            for t in api['trusts']}
        api['endpoint_policy'] = {I['policy:compute']: sorted(
            e['id'] for e in self.get('/policies/%s/OS-ENDPOINT-POLICY/endpoints'
                                      % I['policy:compute'])['endpoints'])}
        # project-scoped only (keystone's policy for OAuth1 access tokens)
        api['oauth1_access_tokens'] = sorted(self.http(
            'GET', '/users/%s/OS-OAUTH1/access_tokens' % I['user:admin'],
            headers={'X-Auth-Token': self.admin_token})[2]['access_tokens'],
            key=lambda x: x['id'])
        api['role_assignments'] = canon_sorted(self.get(
            '/role_assignments')['role_assignments'])
        api['role_assignments_effective'] = canon_sorted(self.get(
            '/role_assignments?effective&include_names')['role_assignments'])
        ex['api'] = api

        kinds = ('domains', 'projects', 'users', 'groups', 'roles', 'regions',
                 'services', 'endpoints', 'endpoint_groups', 'policies',
                 'credentials', 'application_credentials', 'access_rules',
                 'trusts', 'identity_providers', 'mappings',
                 'service_providers', 'registered_limits', 'limits',
                 'consumers', 'oauth1_access_tokens')
        ex['ids'] = {k: sorted(x['id'] for x in api[k]) for k in kinds}

        ex['role_assignments_names'] = canon_sorted(self.osc(
            'role', 'assignment', 'list', '--names'))
        ex['role_assignments'] = canon_sorted(self.osc('role', 'assignment',
                                                       'list'))
        ex['role_assignments_effective_names'] = canon_sorted(self.osc(
            'role', 'assignment', 'list', '--effective', '--names'))
        ex['catalog'] = sorted_catalog(self.osc('catalog', 'list'))
        # the endpoint-filtered catalog that acme-child tokens carry
        child = self.osc_env(I['user:alice'], 'alice-pass-3', I['project:child'])
        ex['catalog_acme_child'] = sorted_catalog(self.osc(
            'catalog', 'list', env=child))

        # user rows as the API shows them, merged into our users list
        by_id = {u['id']: u for u in api['users']}
        for name, u in self.users.items():
            full = by_id[u['id']]
            u['enabled'] = full.get('enabled')
            u['options'] = full.get('options', {})
            u['password_expires_at'] = full.get('password_expires_at')
            u['default_project_id'] = full.get('default_project_id')
        if set(by_id) != {u['id'] for u in self.users.values()}:
            raise FixtureError('user list and fixture users differ')

        # fernet and credential key repositories, for reference
        def keys(d):
            p = os.path.join(self.out, d)
            return {k: open(os.path.join(p, k)).read().strip()
                    for k in sorted(os.listdir(p)) if not k.startswith('.')}
        ex['fernet_keys'] = keys('fernet-keys')
        ex['credential_keys'] = keys('credential-keys')

    def write_expected(self):
        ex = self.extra
        doc = {
            'keystone_version': keystone_version(),
            'keystone_url': self.url,
            'database_url': self.db_url,
            'server': self.server_desc,
            'config': {'token_expiration': 3600, 'password_hash_rounds': 4,
                       'lockout_failure_attempts': 3, 'lockout_duration': 1800,
                       'unique_last_password_count': 3},
            'admin_password': ADMIN_PASSWORD,
            'users': sorted(self.users.values(), key=lambda u: u['name']),
            'named_ids': dict(sorted(self.ids.items())),
            'ids': ex['ids'],
            'role_assignments_names': ex['role_assignments_names'],
            'role_assignments': ex['role_assignments'],
            'role_assignments_effective_names':
                ex['role_assignments_effective_names'],
            'catalog': ex['catalog'],
            'catalog_acme_child': ex['catalog_acme_child'],
            'application_credentials': ex['application_credentials'],
            'ec2': ex['ec2'],
            'consumers': ex['consumers'],
            'totp': {'user_id': self.ids['user:mallory'],
                     'credential_id': self.ids['credential:totp'],
                     'secret': TOTP_SECRET},
            'mfa_receipt': ex['mfa_receipt'],
            'oauth1': ex['oauth1'],
            'domain_config': ex['domain_config'],
            'expired_password_expires_at': ex['expired_password_expires_at'],
            'tokens': self.tokens,
            'revoked_tokens': self.revoked,
            'revoked_token_details': ex['revoked_token_details'],
            'fernet_keys': ex['fernet_keys'],
            'credential_keys': ex['credential_keys'],
            'api': ex['api'],
        }
        path = os.path.join(self.out, 'expected.json')
        tmp = path + '.tmp'
        with open(tmp, 'w') as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write('\n')
        os.replace(tmp, path)
        log('wrote %s' % path)


def sorted_catalog(entries):
    """OSC's catalog list, services and their endpoints in canonical order."""
    out = []
    for e in entries:
        e = dict(e)
        if isinstance(e.get('Endpoints'), list):
            e['Endpoints'] = canon_sorted(e['Endpoints'])
        out.append(e)
    return canon_sorted(out)


def totp_now(secret_b32, digits=6, period=30):
    key = base64.b32decode(secret_b32 + '=' * (-len(secret_b32) % 8))
    counter = int(time.time()) // period
    mac = hmac.new(key, struct.pack('>Q', counter), hashlib.sha1).digest()
    off = mac[-1] & 0x0F
    code = (struct.unpack('>I', mac[off:off + 4])[0] & 0x7FFFFFFF) % 10 ** digits
    return str(code).zfill(digits)


def keystone_version():
    from importlib import metadata
    try:
        return metadata.version('keystone')
    except metadata.PackageNotFoundError:
        return None


class Timeout(Exception):
    pass


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', help='new or empty output directory')
    ap.add_argument('--port', type=int, help='port on 127.0.0.1 for keystone')
    ap.add_argument('--database-url', help='SQLAlchemy URL of the keystone '
                    'database (default: sqlite file DIR/keystone.db)')
    ap.add_argument('--keep-running', action='store_true',
                    help='leave keystone serving after expected.json')
    ap.add_argument('--keep-running-timeout', type=float, default=3600,
                    help='with --keep-running: stop keystone after this many '
                    'seconds (default 3600)')
    ap.add_argument('--timeout', type=float, default=300,
                    help='give up after this many seconds (default 300)')
    ap.add_argument('--server', choices=('auto', 'gunicorn', 'werkzeug'),
                    default='auto')
    # internal modes
    ap.add_argument('--serve', action='store_true', help=argparse.SUPPRESS)
    ap.add_argument('--config', help=argparse.SUPPRESS)
    ap.add_argument('--watchdog', type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.serve:
        serve(args.config, args.port)
        return 0
    if args.watchdog:
        watchdog(args.watchdog, args.keep_running_timeout)
        return 0
    if not args.out or not args.port:
        ap.error('--out and --port are required')
    for exe in (os.path.join(KEYSTONE_VENV, 'bin', 'keystone-manage'),
                os.path.join(OSC_VENV, 'bin', 'openstack')):
        if not os.access(exe, os.X_OK):
            print('keystone_source: missing %s (run scripts/install-test-deps)'
                  % exe, file=sys.stderr)
            return 2

    def on_alarm(*_):
        raise Timeout('gave up after %d s (--timeout)' % args.timeout)

    def on_term(signum, _):
        raise SystemExit('keystone_source: stopped by signal %d' % signum)

    signal.signal(signal.SIGALRM, on_alarm)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    signal.alarm(int(args.timeout))

    src = Source(args)
    ok = False
    try:
        if not src.port_free():
            raise FixtureError('port %d on 127.0.0.1 is already in use'
                               % src.port)
        src.prepare_dir()
        src.setup_keystone()
        src.start_server()
        src.admin_login()
        src.populate()
        src.issue_tokens()
        src.check_states()
        src.collect()
        src.write_expected()
        ok = True
    except (FixtureError, Timeout) as e:
        print('keystone_source: FAILED: %s' % e, file=sys.stderr)
    except Exception as e:   # a bug here, or Keystone/OSC answered oddly
        import traceback
        traceback.print_exc()
        print('keystone_source: FAILED: unexpected %s: %s'
              % (type(e).__name__, e), file=sys.stderr)
    finally:
        signal.alarm(0)
        if not (ok and args.keep_running):
            src.stop_server()
    if not ok:
        if src.log_path and os.path.exists(src.log_path):
            print('keystone_source: keystone log: %s' % src.log_path,
                  file=sys.stderr)
        return 1
    if args.keep_running:
        pid = src.server.pid
        subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), '--watchdog', str(pid),
             '--keep-running-timeout', str(args.keep_running_timeout)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)
        print('KEYSTONE_PID=%d' % pid)
        print('KEYSTONE_URL=%s' % src.url)
    log('done in %.1f s' % (time.monotonic() - T0))
    return 0


if __name__ == '__main__':
    sys.exit(main())
