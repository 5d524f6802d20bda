"""TOTP and multi-factor authentication judged by keystoneauth1 and python-openstackclient.

Usage: totp_client.py <auth_url ending in /v3> <admin password> <openstack executable>
                      [<the node's [receipt] expiration, to check that a receipt expires>]

Passcodes are computed here with the standard library (RFC 6238: HMAC-SHA1, 6 digits,
30-second steps), independently of the server. Each user proves one passcode: a passcode
works once per user and step, so every check that must succeed has its own user.
Prints one "ok <check>" line per check; exits non-zero on the first failure.
"""

import base64
import hashlib
import hmac
import os
import struct
import subprocess
import sys
import time
import uuid

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3

AUTH_URL, ADMIN_PASSWORD, OPENSTACK = sys.argv[1], sys.argv[2], sys.argv[3]
RECEIPT_EXPIRATION = int(sys.argv[4]) if len(sys.argv) > 4 else None
SECRET = base64.b32encode(os.urandom(20)).decode().rstrip("=")
RULES = [["password", "totp"]]


def passcode(secret, at=None):
    key = base64.b32decode(secret + "=" * (-len(secret) % 8))
    counter = int((time.time() if at is None else at) // 30)
    digest = hmac.new(key, struct.pack(">Q", counter), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    code = (struct.unpack(">I", digest[offset:offset + 4])[0] & 0x7FFFFFFF) % 1_000_000
    return "%06d" % code


def ok(what):
    print("ok", what, flush=True)


admin = ks_session.Session(auth=v3.Password(
    auth_url=AUTH_URL, username="admin", password=ADMIN_PASSWORD, user_domain_id="default",
    project_name="admin", project_domain_id="default"))
project = admin.post("/projects", endpoint_filter={"service_type": "identity", "interface": "public"},
                     json={"project": {"name": "mfa-" + uuid.uuid4().hex[:8], "domain_id": "default"}}).json()["project"]
member_role = next(r for r in admin.get("/roles", endpoint_filter={"service_type": "identity", "interface": "public"})
                   .json()["roles"] if r["name"] == "member")


def call(method, path, **kw):
    r = admin.request(path, method, endpoint_filter={"service_type": "identity", "interface": "public"},
                      raise_exc=False, **kw)
    return r


def mfa_user(rules=RULES):
    """A user with a password, a TOTP credential, the member role and multi-factor rules."""
    name = "mfa-" + uuid.uuid4().hex[:10]
    password = "pw-" + uuid.uuid4().hex
    r = call("POST", "/users", json={"user": {"name": name, "domain_id": "default", "password": password,
                                               "options": {"multi_factor_auth_rules": rules,
                                                           "multi_factor_auth_enabled": True}}})
    assert r.status_code == 201, r.text
    user = r.json()["user"]
    assert user["options"]["multi_factor_auth_rules"] == rules, user
    r = call("POST", "/credentials", json={"credential": {"type": "totp", "user_id": user["id"], "blob": SECRET}})
    assert r.status_code == 201, r.text
    r = call("PUT", "/projects/%s/users/%s/roles/%s" % (project["id"], user["id"], member_role["id"]))
    assert r.status_code == 204, r.text
    return user["id"], name, password


def token_of(auth):
    s = ks_session.Session(auth=auth)
    token = s.get_token()
    return token, s.get_user_id(), auth.auth_ref._data["token"]["methods"]


# Option validation as Keystone's: a malformed rule list is refused.
for bad in ([[]], ["password"], [["password", "password"]], [["totp"], ["totp"]]):
    r = call("POST", "/users", json={"user": {"name": "bad-" + uuid.uuid4().hex[:8], "domain_id": "default",
                                               "options": {"multi_factor_auth_rules": bad}}})
    assert r.status_code == 400, (bad, r.status_code, r.text)
ok("malformed multi_factor_auth_rules are refused with 400")

# 1a. keystoneauth's MultiFactor plugin: password and totp in one request.
uid, name, pw = mfa_user()
auth = v3.MultiFactor(auth_url=AUTH_URL, auth_methods=["v3password", "v3totp"], user_id=uid, password=pw,
                      passcode=passcode(SECRET), project_id=project["id"])
token, who, methods = token_of(auth)
assert who == uid and sorted(methods) == ["password", "totp"], (who, methods)
ok("v3multifactor password+totp issues a token")

# 1b. Password alone: 401 with a receipt and the rules; then the receipt plus totp.
uid, name, pw = mfa_user()
try:
    v3.Password(auth_url=AUTH_URL, user_id=uid, password=pw, project_id=project["id"]).get_auth_ref(
        ks_session.Session())
    raise AssertionError("password alone issued a token")
except ks_exc.MissingAuthMethods as e:
    receipt = e.receipt
    assert receipt, "no Openstack-Auth-Receipt header"
    assert e.methods == ["password"], e.methods
    assert [sorted(r) for r in e.required_auth_methods] == [["password", "totp"]], e.required_auth_methods
    assert e.expires_at is not None
ok("password alone answers 401 with a receipt and the rules")

# The receipt is not a token.
r = call("GET", "/auth/tokens", headers={"X-Subject-Token": receipt})
assert r.status_code == 404, (r.status_code, r.text)
r = ks_session.Session().get(AUTH_URL + "/auth/tokens", headers={"X-Auth-Token": receipt,
                                                              "X-Subject-Token": receipt}, raise_exc=False)
assert r.status_code == 401, (r.status_code, r.text)
ok("a receipt is not a token")

# A tampered receipt is refused: the password alone would have been asked for more, with the
# altered receipt it is a plain 401.
tampered = receipt[:-2] + ("AA" if receipt[-2:] != "AA" else "BB")
try:
    v3.Auth(auth_url=AUTH_URL, project_id=project["id"], auth_methods=[
        v3.PasswordMethod(user_id=uid, password=pw), v3.ReceiptMethod(receipt=tampered)]).get_auth_ref(
        ks_session.Session())
    raise AssertionError("a tampered receipt was accepted")
except ks_exc.Unauthorized:
    pass
ok("a tampered receipt is refused")

auth = v3.Auth(auth_url=AUTH_URL, project_id=project["id"], auth_methods=[
    v3.TOTPMethod(user_id=uid, passcode=passcode(SECRET)), v3.ReceiptMethod(receipt=receipt)])
token, who, methods = token_of(auth)
assert who == uid and sorted(methods) == ["password", "totp"], (who, methods)
ok("the receipt plus totp completes the authentication")

# Another user's receipt does not count.
other_uid, _, other_pw = mfa_user()
try:
    v3.Auth(auth_url=AUTH_URL, auth_methods=[
        v3.PasswordMethod(user_id=other_uid, password=other_pw),
        v3.ReceiptMethod(receipt=receipt)]).get_auth_ref(ks_session.Session())
    raise AssertionError("another user's receipt was accepted")
except ks_exc.Unauthorized:
    pass
ok("another user's receipt is refused")

# 2. python-openstackclient.
uid, name, pw = mfa_user()
out = subprocess.run(
    [OPENSTACK, "--os-auth-type", "v3multifactor", "--os-auth-methods", "v3password,v3totp",
     "--os-auth-url", AUTH_URL, "--os-username", name, "--os-user-domain-name", "Default",
     "--os-password", pw, "--os-passcode", passcode(SECRET), "--os-project-id", project["id"],
     "--os-identity-api-version", "3", "--os-interface", "public",
     "token", "issue", "-f", "value", "-c", "user_id"],
    capture_output=True, text=True, timeout=120)
assert out.returncode == 0, out.stdout + out.stderr
assert out.stdout.strip() == uid, out.stdout
ok("openstack --os-auth-type v3multifactor token issue")

# 3. Wrong, replayed and out-of-window passcodes are refused (a user whose only rule is totp).
uid, name, pw = mfa_user(rules=[["totp"]])


def totp_token(code):
    auth = v3.TOTP(auth_url=AUTH_URL, user_id=uid, passcode=code, project_id=project["id"])
    return ks_session.Session(auth=auth).get_token()


def refused(code):
    try:
        totp_token(code)
    except ks_exc.Unauthorized:
        return True
    return False


now = time.time()
window = {passcode(SECRET, now + d) for d in (-60, -30, 0, 30)}
wrong = next(c for c in ("%06d" % ((int(passcode(SECRET)) + k) % 1_000_000) for k in range(1, 50))
             if c not in window)
assert refused(wrong), "a wrong passcode was accepted"
ok("a wrong passcode is refused")
old = next(passcode(SECRET, now - 30 * k) for k in range(3, 10) if passcode(SECRET, now - 30 * k) not in window)
assert refused(old), "a passcode 3 steps old was accepted"
ok("an out-of-window passcode is refused")
code = passcode(SECRET)
assert totp_token(code), "the current passcode was refused"
assert refused(code), "a replayed passcode was accepted"
ok("a replayed passcode is refused")
# An expired receipt is refused (when the node's receipts live briefly enough to wait for).
if RECEIPT_EXPIRATION is not None:
    uid, name, pw = mfa_user()
    try:
        v3.Password(auth_url=AUTH_URL, user_id=uid, password=pw).get_auth_ref(ks_session.Session())
        raise AssertionError("password alone issued a token")
    except ks_exc.MissingAuthMethods as e:
        receipt = e.receipt
    time.sleep(RECEIPT_EXPIRATION + 1)
    try:
        v3.Auth(auth_url=AUTH_URL, auth_methods=[
            v3.PasswordMethod(user_id=uid, password=pw), v3.ReceiptMethod(receipt=receipt)]).get_auth_ref(
            ks_session.Session())
        raise AssertionError("an expired receipt was accepted")
    except ks_exc.Unauthorized:
        pass
    ok("an expired receipt is refused")
print("all checks passed", flush=True)
