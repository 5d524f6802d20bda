"""Real-client test kit for idnode's per-domain OAuth2/OIDC provider (/v4/oauth2/{domain_id}).

Every flow goes through authlib's OAuth2Session (a real, widely used OAuth2 client), every JWT
is verified with PyJWT against the issuer's JWKS (ES256, signature, iss, aud, exp, nonce), and
the login/consent pages are driven in headless Chromium through selenium and the system
chromedriver (never Selenium Manager: no network). Used by tests/it/oauth2_clients.rs.

usage: oidc_client.py SUBCOMMAND --issuer URL --client-id ID [--client-secret S] [--scope S] ...
  client_credentials | code | passkey | refresh | device | exchange | verify | introspect | revoke | userinfo
(see build_parser() for each subcommand's options). Every result is ONE JSON object on stdout;
a failure exits 1 with {"error": ...} on stdout and the traceback on stderr.
"""
import argparse
import base64
import hashlib
import json
import os
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

# Loopback only: no proxy may sit between the client and the server (urllib, requests,
# selenium's connection to chromedriver all honour *_proxy variables).
for _k in [k for k in os.environ if k.lower().endswith("_proxy")]:
    del os.environ[_k]
os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must never reach for the network

import jwt  # noqa: E402
import requests  # noqa: E402
from authlib.common.security import generate_token  # noqa: E402
from authlib.integrations.base_client import OAuthError  # noqa: E402
from authlib.integrations.requests_client import OAuth2Session  # noqa: E402

CHROMEDRIVER = os.environ.get("IDNODE_CHROMEDRIVER", "/usr/bin/chromedriver")
CHROMIUM = os.environ.get("IDNODE_CHROMIUM", "/usr/bin/chromium")
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
DEVICE_CODE = "urn:ietf:params:oauth:grant-type:device_code"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
# RFC 8628 user codes here: A-Z and 0-9 minus O, 0, I, l, 1 (an optional '-' separates groups).
USER_CODE_ALPHABET = set("ABCDEFGHJKLMNPQRSTUVWXYZ23456789")
HTTP_TIMEOUT = 20


class Fail(Exception):
    """A check of this script failed (as opposed to an OAuth error answered by the server)."""


# ----------------------------------------------------------------------------------------------
# Discovery, sessions, JWT verification
# ----------------------------------------------------------------------------------------------

def discover(issuer):
    """The discovery document; its `issuer` must be exactly the issuer we were given."""
    r = requests.get(issuer + "/.well-known/openid-configuration", timeout=HTTP_TIMEOUT)
    r.raise_for_status()
    meta = r.json()
    if meta.get("issuer") != issuer:
        raise Fail(f"discovery issuer {meta.get('issuer')!r} != {issuer!r}")
    return meta


def session(args, meta, **kw):
    """authlib client session: client_secret_basic with a secret, `none` (client_id in the
    body) for public clients. Token endpoint answers are recorded raw in `session.last`."""
    s = OAuth2Session(args.client_id, args.client_secret, scope=kw.pop("scope", args.scope),
                      token_endpoint=meta["token_endpoint"], default_timeout=HTTP_TIMEOUT, **kw)
    s.trust_env = False
    s.last = {}

    def record(resp):
        try:
            body = resp.json()
        except ValueError:
            body = resp.text
        s.last = {"http_status": resp.status_code, "cache_control": resp.headers.get("Cache-Control"),
                  "body": body}
        return resp
    s.register_compliance_hook("access_token_response", record)
    s.register_compliance_hook("refresh_token_response", record)
    return s


def verify_jwt(token, meta, audience, nonce=None):
    """Verifies a JWT through the issuer's JWKS: ES256 only, signature, iss, aud, exp (nbf and
    iat when present); for an id token also `nonce`. Returns the claims."""
    key = jwt.PyJWKClient(meta["jwks_uri"], cache_jwk_set=False).get_signing_key_from_jwt(token)
    claims = jwt.decode(token, key.key, algorithms=["ES256"], audience=audience, issuer=meta["issuer"],
                        leeway=5, options={"require": ["exp", "iat", "iss", "aud", "sub"]})
    if nonce is not None and claims.get("nonce") != nonce:
        raise Fail(f"id token nonce {claims.get('nonce')!r} != {nonce!r}")
    return claims


def at_hash(access_token):
    """OIDC Core 3.1.3.6 at_hash for ES256: left half of SHA-256, base64url without padding."""
    digest = hashlib.sha256(access_token.encode()).digest()
    return base64.urlsafe_b64encode(digest[:16]).rstrip(b"=").decode()


def verify_tokens(args, meta, token, nonce=None):
    """Verifies the access token (and the id token, if any) of a token response.
    The access token's audience follows the spec: `platform-apis` with platform:api granted,
    otherwise the client id (`--access-audience` overrides)."""
    granted = (token.get("scope") or args.scope or "").split()
    aud = args.access_audience or ("platform-apis" if "platform:api" in granted else args.client_id)
    out = {"access_claims": verify_jwt(token["access_token"], meta, aud)}
    if "id_token" in token:
        idc = verify_jwt(token["id_token"], meta, args.client_id, nonce)
        out["id_claims"] = idc
        if idc.get("at_hash") is not None:
            out["at_hash_ok"] = idc["at_hash"] == at_hash(token["access_token"])
    return out


def oauth_error(e, s=None):
    """An OAuth error answer as a result object."""
    out = {"error": e.error, "error_description": getattr(e, "description", None)}
    if s is not None and s.last:
        out["http_status"] = s.last["http_status"]
    return out


def token_request(args, s, request):
    """Runs `request` (a call to the token endpoint through session `s`). With --expect-error it
    must fail with an OAuth error, answered as `oauth_error` reports it; without, it must
    succeed and None is answered (the token response is `s.last`)."""
    try:
        request()
    except OAuthError as e:
        if args.expect_error:
            return oauth_error(e, s)
        raise
    if args.expect_error:
        raise Fail(f"expected an OAuth error, got a token response: {s.last['body']}")
    return None


# ----------------------------------------------------------------------------------------------
# Browser: headless Chromium through the system chromedriver
# ----------------------------------------------------------------------------------------------

def browser(narrow=False):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--no-proxy-server", "--window-size=" + ("320,640" if narrow else "1024,768")):
        opts.add_argument(a)
    # The performance log carries the real response headers of every page the browser loads
    # (selenium itself cannot read headers), including pages that answer a form POST.
    opts.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    if narrow:
        # Headless Chromium keeps windows at least 500 px wide: emulate a 320x640 phone
        # instead (mobile: the page's viewport meta decides its layout width, as on a phone).
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": 320, "height": 640, "deviceScaleFactor": 1, "mobile": True})
    return driver


def last_document_response(driver):
    """The last top-level document response since the previous call (from the perf log)."""
    found = None
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg.get("method") == "Network.responseReceived" and msg["params"].get("type") == "Document":
            found = msg["params"]["response"]
    return found


def header(resp, name):
    for k, v in ((resp or {}).get("headers") or {}).items():
        if k.lower() == name.lower():
            return v
    return None


def drive(driver, url, stop_prefix, args, user_code=None):
    """Opens `url` and answers the pages: login (a `password` input), consent (`decision`
    buttons), device user-code entry (a visible `user_code` input). Stops when the browser is
    at `stop_prefix` (code flow) or, with no stop_prefix (device flow), on the first page that
    is none of those after something was submitted. Returns (pages, page_checks, final_url)."""
    from selenium.common.exceptions import TimeoutException, WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    def loaded():
        WebDriverWait(driver, 20).until(lambda d: d.execute_script("return document.readyState") == "complete")

    def gone(old):
        # The old page is gone once its root element is stale. While the navigation is under
        # way Chromium may also answer that the node "does not belong to the document": that
        # means gone too, not an error.
        def check(d):
            try:
                return EC.staleness_of(old)(d)
            except WebDriverException as e:
                if "does not belong to the document" in str(e):
                    return True
                raise
        return check

    def submit(button):
        old = driver.find_element(By.TAG_NAME, "html")
        button.click()
        try:
            WebDriverWait(driver, 20).until(gone(old))
        except TimeoutException:
            # e.g. a CSP form-action that leaves out the redirect target: Chromium then
            # blocks the redirect that answers the form and says so on the console.
            console = [e["message"] for e in driver.get_log("browser")]
            raise Fail(f"submitting the {pages[-1]} form did not navigate away from {driver.current_url}; "
                       f"console: {console}; page: {driver.page_source[:800]}") from None
        loaded()

    def submit_button(form):
        return form.find_element(By.CSS_SELECTOR, "button[type=submit], input[type=submit], button:not([type])")

    pages, checks = [], []
    driver.get(url)
    loaded()
    for _ in range(8):
        resp = last_document_response(driver)
        if stop_prefix and driver.current_url.startswith(stop_prefix):
            return pages, checks, driver.current_url
        find = lambda css: driver.find_elements(By.CSS_SELECTOR, css)  # noqa: E731
        if find("input[name=password]"):
            page = "login"
        elif find("[name=decision][value=approve]"):
            page = "consent"
        elif find("input[name=user_code]:not([type=hidden])"):
            page = "user_code"
        elif not stop_prefix and pages:
            return pages, checks, driver.current_url  # device flow: the final "done" page
        else:
            raise Fail(f"unexpected page at {driver.current_url}: {driver.page_source[:1500]}")
        if pages and page == pages[-1] == "login":
            raise Fail(f"login refused: {driver.find_element(By.TAG_NAME, 'body').text[:500]}")
        pages.append(page)
        checks.append({
            "page": page, "url": driver.current_url, "status": (resp or {}).get("status"),
            "cache_control": header(resp, "Cache-Control"), "x_frame_options": header(resp, "X-Frame-Options"),
            "content_security_policy": header(resp, "Content-Security-Policy"),
            "viewport_meta": bool(find("meta[name=viewport]")),
            "scroll_width": driver.execute_script("return document.documentElement.scrollWidth"),
        })
        if page == "login":
            pw = find("input[name=password]")[0]
            form = pw.find_element(By.XPATH, "./ancestor::form")
            form.find_element(By.NAME, "username").clear()
            form.find_element(By.NAME, "username").send_keys(args.username)
            if getattr(args, "passkey", False):
                # The page's script asks for a challenge, the browser's authenticator signs
                # it, and the script posts the answer: no password typed.
                buttons = find("#passkey-button")
                if not buttons or not buttons[0].is_displayed():
                    raise Fail(f"no visible passkey button on the login page: {driver.page_source[:1500]}")
                submit(buttons[0])
            else:
                pw.send_keys(args.password)
                submit(submit_button(form))
        elif page == "consent":
            remember = find("input[name=remember]")
            if args.remember:
                if not remember:
                    raise Fail("--remember given but the consent page has no `remember` checkbox")
                if not remember[0].is_selected():
                    remember[0].click()
            submit(find(f"[name=decision][value={args.decision}]")[0])
        else:
            box = find("input[name=user_code]:not([type=hidden])")[0]
            if not box.get_attribute("value"):
                box.send_keys(user_code)
            submit(submit_button(box.find_element(By.XPATH, "./ancestor::form")))
    raise Fail(f"still not done after {pages}: {driver.current_url}")


class Callback(BaseHTTPRequestHandler):
    """The loopback redirect target (RFC 8252 §7.3); the browser's URL is what counts."""

    def do_GET(self):  # noqa: N802
        body = b"<!doctype html><title>callback</title><p>done</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


# ----------------------------------------------------------------------------------------------
# Subcommands
# ----------------------------------------------------------------------------------------------

def cmd_client_credentials(args, meta):
    s = session(args, meta)
    s.fetch_token(meta["token_endpoint"], grant_type="client_credentials")
    args.access_audience = args.access_audience or "platform-apis"  # every client_credentials token
    return {"token": s.last["body"], "token_cache_control": s.last["cache_control"],
            **verify_tokens(args, meta, s.last["body"])}


def cmd_code(args, meta):
    redirect_uri = f"http://127.0.0.1:{args.redirect_port}/cb"
    server = ThreadingHTTPServer(("127.0.0.1", args.redirect_port), Callback)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    s = session(args, meta, redirect_uri=redirect_uri, code_challenge_method="S256")
    verifier, nonce = generate_token(64), generate_token(24)
    extra = {"prompt": args.prompt} if args.prompt else {}
    url, state = s.create_authorization_url(meta["authorization_endpoint"], code_verifier=verifier,
                                            nonce=nonce, **extra)
    driver = browser(args.narrow)
    try:
        pages, checks, final = drive(driver, url, redirect_uri, args)
    finally:
        driver.quit()
        server.shutdown()
    query = dict(parse_qsl(urlsplit(final).query))
    out = {"redirect_uri": redirect_uri, "pages": pages, "page_checks": checks, "redirect_query": query}
    if args.narrow:
        out["fits_320"] = all(c["scroll_width"] <= 320 for c in checks)
    if query.get("state") != state:
        raise Fail(f"redirect state {query.get('state')!r} != {state!r}: {final}")
    if "error" in query:
        if args.decision == "approve":
            raise Fail(f"authorization failed: {query}")
        return out
    if args.decision == "deny":
        raise Fail(f"denied, yet the redirect carries no error: {query}")
    # authlib parses the redirect (state check included) and posts code + code_verifier.
    s.fetch_token(meta["token_endpoint"], authorization_response=final, state=state, code_verifier=verifier)
    out.update({"token": s.last["body"], "token_cache_control": s.last["cache_control"], "nonce": nonce,
                **verify_tokens(args, meta, s.last["body"], nonce)})
    return out


# Registers a passkey from the relying party's own origin, as a page of it would: the user's
# token, register_start, navigator.credentials.create, register_finish with the browser's
# PublicKeyCredential.toJSON() spelling.
REGISTER_JS = """
const [userId, token, done] = arguments;
(async () => {
  const headers = {'X-Auth-Token': token, 'Content-Type': 'application/json'};
  const base = `/v4/users/${userId}/passkeys`;
  let r = await fetch(`${base}/register_start`, {method: 'POST', headers,
                      body: JSON.stringify({passkey: {description: 'chromium'}})});
  if (r.status !== 201) return done({step: 'start', status: r.status, body: await r.text()});
  const options = PublicKeyCredential.parseCreationOptionsFromJSON((await r.json()).publicKey);
  const credential = await navigator.credentials.create({publicKey: options});
  r = await fetch(`${base}/register_finish`, {method: 'POST', headers, body: JSON.stringify(credential.toJSON())});
  done({step: 'finish', status: r.status, body: await r.json()});
})().catch(e => done({step: 'error', error: String(e)}));
"""


def cmd_passkey(args, meta):
    """The code flow signed in with a passkey: Chromium gets a DevTools virtual authenticator
    (CTAP2, internal, user verification), registers a passkey for the user through
    /v4/users/{id}/passkeys from the login page's origin, then signs in with the login page's
    "Sign in with a passkey" button; the code is redeemed at /token and the tokens verified.
    The browser uses `localhost` (WebAuthn needs a domain; the node's relying party is
    `localhost` when its public URL is a loopback address)."""
    api = meta["issuer"].split("/v4/", 1)[0]
    r = requests.post(api + "/v3/auth/tokens", timeout=HTTP_TIMEOUT, json={"auth": {"identity": {
        "methods": ["password"], "password": {"user": {"id": args.user_id, "password": args.password}}}}})
    if r.status_code not in (200, 201):
        raise Fail(f"password login for the registration failed: {r.status_code} {r.text}")
    token = r.headers["X-Subject-Token"]
    redirect_uri = f"http://127.0.0.1:{args.redirect_port}/cb"
    server = ThreadingHTTPServer(("127.0.0.1", args.redirect_port), Callback)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    s = session(args, meta, redirect_uri=redirect_uri, code_challenge_method="S256")
    verifier, nonce = generate_token(64), generate_token(24)
    url, state = s.create_authorization_url(meta["authorization_endpoint"], code_verifier=verifier, nonce=nonce)
    browser_url = url.replace("://127.0.0.1:", "://localhost:", 1)
    driver = browser()
    try:
        driver.execute_cdp_cmd("WebAuthn.enable", {"enableUI": False})
        authenticator = driver.execute_cdp_cmd("WebAuthn.addVirtualAuthenticator", {"options": {
            "protocol": "ctap2", "transport": "internal", "hasResidentKey": True,
            "hasUserVerification": True, "isUserVerified": True, "automaticPresenceSimulation": True}})
        driver.get(browser_url)
        driver.set_script_timeout(30)
        registered = driver.execute_async_script(REGISTER_JS, args.user_id, token)
        if registered.get("status") != 201:
            raise Fail(f"registration in the browser failed: {registered}")
        held = driver.execute_cdp_cmd("WebAuthn.getCredentials", {"authenticatorId": authenticator["authenticatorId"]})
        pages, checks, final = drive(driver, browser_url, redirect_uri, args)
        after = driver.execute_cdp_cmd("WebAuthn.getCredentials", {"authenticatorId": authenticator["authenticatorId"]})
    finally:
        driver.quit()
        server.shutdown()
    query = dict(parse_qsl(urlsplit(final).query))
    if query.get("state") != state or "code" not in query:
        raise Fail(f"the redirect carries no code for our state: {final}")
    s.fetch_token(meta["token_endpoint"], authorization_response=final, state=state, code_verifier=verifier)
    return {"registered": registered, "pages": pages, "page_checks": checks,
            "authenticator_credentials": len(held["credentials"]),
            "sign_count": [c["signCount"] for c in after["credentials"]],
            "token": s.last["body"], "nonce": nonce, **verify_tokens(args, meta, s.last["body"], nonce)}


def cmd_refresh(args, meta):
    s = session(args, meta)
    error = token_request(args, s, lambda: s.refresh_token(meta["token_endpoint"], refresh_token=args.refresh_token))
    if error is not None:
        return error
    return {"token": s.last["body"], **verify_tokens(args, meta, s.last["body"])}


def cmd_device(args, meta):
    s = session(args, meta)
    # authlib has no device-flow helper: a plain form POST through the session, with the
    # client authenticated by authlib as at the token endpoint.
    r = s.post(meta["device_authorization_endpoint"], data={"scope": args.scope} if args.scope else {},
               auth=s.client_auth(s.token_endpoint_auth_method), withhold_token=True)
    if r.status_code != 200:
        raise Fail(f"device_authorization answered {r.status_code}: {r.text}")
    da = r.json()
    missing = [k for k in ("device_code", "user_code", "verification_uri", "expires_in", "interval") if k not in da]
    if missing:
        raise Fail(f"device authorization response lacks {missing}: {da}")
    code = da["user_code"].replace("-", "")
    out = {"device_authorization": da, "user_code_ok": len(code) >= 8 and set(code) <= USER_CODE_ALPHABET,
           "poll_errors": []}
    s.scope = None  # the device_code token request carries no scope

    def poll():
        try:
            s.fetch_token(meta["token_endpoint"], grant_type=DEVICE_CODE, device_code=da["device_code"])
            return None
        except OAuthError as e:
            out["poll_errors"].append(e.error)
            return e.error

    interval = int(da["interval"])
    first, second = poll(), poll()  # immediately twice: authorization_pending, then maybe slow_down
    if first is None or second is None:
        raise Fail(f"tokens before the user approved: {s.last}")
    if "slow_down" in (first, second):
        interval += 5
    driver = browser()
    try:
        out["pages"], out["page_checks"], out["final_url"] = drive(
            driver, da.get("verification_uri_complete") or da["verification_uri"], None, args, da["user_code"])
    finally:
        driver.quit()
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        time.sleep(interval)
        err = poll()
        if err is None:
            return {**out, "token": s.last["body"], **verify_tokens(args, meta, s.last["body"])}
        if err == "slow_down":
            interval += 5
        elif err != "authorization_pending":
            out["final_error"] = err
            if args.decision == "deny" and err == "access_denied":
                return out
            raise Fail(f"device flow ended with {err}: {out}")
    raise Fail(f"no tokens within 90 s: {out}")


def cmd_exchange(args, meta):
    s = session(args, meta)
    s.scope = args.scope  # None unless asked: the exchange narrows the subject token's grant
    params = {"subject_token": args.subject_token, "subject_token_type": ACCESS_TOKEN_TYPE}

    def exchange():
        if len(args.audience) == 1:
            s.fetch_token(meta["token_endpoint"], grant_type=TOKEN_EXCHANGE, audience=args.audience[0], **params)
        else:
            # authlib posts its form as a dict, which cannot repeat `audience`; post the list
            # of pairs through the session, client authentication and parsing still authlib's.
            form = [("grant_type", TOKEN_EXCHANGE), *params.items(), *[("audience", a) for a in args.audience]]
            if args.scope:
                form.append(("scope", args.scope))
            resp = s.post(meta["token_endpoint"], data=form, withhold_token=True,
                          auth=s.client_auth(s.token_endpoint_auth_method))
            for hook in s.compliance_hook["access_token_response"]:
                hook(resp)
            s.parse_response_token(resp)

    error = token_request(args, s, exchange)
    if error is not None:
        return error
    token = s.last["body"]
    claims = verify_jwt(token["access_token"], meta, args.audience)
    aud = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    return {"token": token, "access_claims": claims, "aud_matches_request": sorted(aud) == sorted(args.audience)}


def cmd_verify(args, meta):
    return {"claims": verify_jwt(args.token, meta, args.audience, args.nonce)}


def http_result(r):
    try:
        body = r.json()
    except ValueError:
        body = r.text
    return {"status": r.status_code, "body": body, "cache_control": r.headers.get("Cache-Control"),
            "www_authenticate": r.headers.get("WWW-Authenticate")}


def cmd_introspect(args, meta):
    s = session(args, meta)
    return http_result(s.introspect_token(meta["introspection_endpoint"], token=args.token, token_type_hint=args.hint))


def cmd_revoke(args, meta):
    s = session(args, meta)
    return http_result(s.revoke_token(meta["revocation_endpoint"], token=args.token, token_type_hint=args.hint))


def cmd_userinfo(args, meta):
    s = session(args, meta, token={"access_token": args.token, "token_type": "Bearer"})
    return http_result(s.get(meta["userinfo_endpoint"]))


def build_parser():
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--issuer", required=True, help="e.g. http://127.0.0.1:5000/v4/oauth2/default")
    common.add_argument("--client-id", required=True)
    common.add_argument("--client-secret", help="confidential clients only")
    common.add_argument("--scope")
    common.add_argument("--access-audience", help="override the expected access-token aud")
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("client_credentials", parents=[common])
    c = sub.add_parser("code", parents=[common])
    c.add_argument("--redirect-port", type=int, required=True)
    for sp in (c, sub.add_parser("device", parents=[common])):
        sp.add_argument("--username", required=True)
        sp.add_argument("--password", required=True)
        sp.add_argument("--decision", choices=["approve", "deny"], default="approve")
        sp.add_argument("--remember", action="store_true")
    c.add_argument("--prompt")
    pk = sub.add_parser("passkey", parents=[common])
    pk.add_argument("--redirect-port", type=int, required=True)
    pk.add_argument("--user-id", required=True)
    pk.add_argument("--username", required=True)
    pk.add_argument("--password", required=True, help="only to get the token that registers the passkey")
    pk.set_defaults(passkey=True, decision="approve", remember=False)
    c.add_argument("--narrow", action="store_true", help="320x640 window; reports fits_320")
    r = sub.add_parser("refresh", parents=[common])
    r.add_argument("--refresh-token", required=True)
    e = sub.add_parser("exchange", parents=[common])
    e.add_argument("--subject-token", required=True)
    e.add_argument("--audience", action="append", required=True)
    for sp in (r, e):
        sp.add_argument("--expect-error", action="store_true", help="an OAuth error is the expected outcome")
    v = sub.add_parser("verify", parents=[common])
    v.add_argument("--token", required=True)
    v.add_argument("--audience", required=True)
    v.add_argument("--nonce")
    for name in ("introspect", "revoke", "userinfo"):
        sp = sub.add_parser(name, parents=[common])
        sp.add_argument("--token", required=True)
        if name != "userinfo":
            sp.add_argument("--hint")
    return p


def main():
    args = build_parser().parse_args()
    try:
        meta = discover(args.issuer.rstrip("/"))
        result = globals()["cmd_" + args.cmd](args, meta)
        code = 0
    except OAuthError as e:
        traceback.print_exc()
        result, code = oauth_error(e), 1
    except Exception as e:  # noqa: BLE001 - every failure becomes one JSON object
        traceback.print_exc()
        result, code = {"error": f"{type(e).__name__}: {e}"}, 1
    print(json.dumps(result, default=str))
    sys.exit(code)


if __name__ == "__main__":
    main()
