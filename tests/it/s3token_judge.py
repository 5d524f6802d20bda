"""S3 requests signed by botocore, authenticated by Swift's own S3 pipeline against idnode:
Swift's s3api middleware parses each request (signature V2 or V4, header or presigned query)
and builds its string to sign, then Swift's s3token middleware asks idnode's /v3/s3tokens who
signed it and puts the answer into the WSGI environ. Everything runs in this process; only
s3token's calls to idnode (and its service login) go over loopback. Used by
tests/it/s3tokens.rs.

usage: s3token_judge.py BASE_URL ACCESS SECRET SERVICE_USER SERVICE_PASSWORD SERVICE_PROJECT

Prints one JSON object: for each case, the final HTTP status of the S3 request and the calls
that reached the WSGI app behind s3token (method, path, identity headers).
"""
import hashlib
import json
import sys
from urllib.parse import urlsplit

from botocore.auth import HmacV1Auth, HmacV1QueryAuth, S3SigV4Auth, S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from swift.common.middleware.s3api import s3api, s3token
from swift.common.swob import Request

base, access, secret, service_user, service_password, service_project = sys.argv[1:7]
# The S3 endpoint a client signs for; never contacted, the request is handed to the pipeline.
HOST = "s3.example.test:8080"
REGION = "RegionOne"
IDENTITY = ("X-Identity-Status", "X-Project-Id", "X-Project-Name", "X-Project-Domain-Id", "X-Tenant-Id",
            "X-User-Id", "X-User-Name", "X-User-Domain-Id", "X-Roles")
OBJECT = b"hello from the object server"


class Backend:
    """The app behind s3token, standing in for the proxy server: records what reaches it and
    serves one object."""

    def __init__(self):
        self.calls = []

    def __call__(self, env, start_response):
        identity = {h: env.get("HTTP_" + h.upper().replace("-", "_")) for h in IDENTITY}
        self.calls.append({"method": env["REQUEST_METHOD"], "path": env["PATH_INFO"], "identity": identity,
                           "token_info": "keystone.token_info" in env})
        start_response("200 OK", [
            ("Content-Type", "text/plain"), ("Content-Length", str(len(OBJECT))),
            ("Etag", '"%s"' % hashlib.md5(OBJECT).hexdigest()),
            ("Last-Modified", "Thu, 01 Jan 2026 00:00:00 GMT"), ("X-Timestamp", "1767225600.00000"),
        ])
        return [OBJECT]


def pipeline(service_auth):
    """s3api -> s3token -> Backend, as a proxy server's paste pipeline puts them."""
    conf = {"auth_uri": base + "/v3", "http_timeout": "5", "delay_auth_decision": "false",
            "secret_cache_duration": "0"}
    if service_auth:
        conf.update(auth_type="password", auth_url=base + "/v3", username=service_user,
                    password=service_password, user_domain_id="default", project_name=service_project,
                    project_domain_id="default")
    backend = Backend()
    app = s3api.filter_factory({}, location=REGION, auth_pipeline_check="false")(
        s3token.filter_factory({}, **conf)(backend))
    return app, backend


def signed(mode, key_secret, key_access=None, path="/bucket/obj"):
    req = AWSRequest(method="GET", url="http://" + HOST + path, headers={})
    creds = Credentials(key_access or access, key_secret)
    signer = {
        "v2": lambda: HmacV1Auth(creds),
        "v2query": lambda: HmacV1QueryAuth(creds, expires=600),
        "v4": lambda: S3SigV4Auth(creds, "s3", REGION),
        "v4query": lambda: S3SigV4QueryAuth(creds, "s3", REGION, expires=600),
    }[mode]()
    signer.add_auth(req)
    return req


def send(app, backend, req, path=None):
    """Hands the signed request to the pipeline, optionally at another path than signed."""
    split = urlsplit(req.url)
    headers = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in req.headers.items()}
    headers["Host"] = split.netloc
    target = (path or split.path) + ("?" + split.query if split.query else "")
    backend.calls.clear()
    resp = Request.blank(target, environ={"REQUEST_METHOD": req.method}, headers=headers).get_response(app)
    return {"status": resp.status_int, "body": resp.body.decode("utf-8", "replace")[:300],
            "calls": list(backend.calls)}


app, backend = pipeline(service_auth=True)
out = {}
for mode in ("v2", "v4", "v2query", "v4query"):
    out[mode] = send(app, backend, signed(mode, secret))
    out[mode + "_wrong_secret"] = send(app, backend, signed(mode, "not-the-secret"))
    out[mode + "_tampered"] = send(app, backend, signed(mode, secret), path="/bucket/other")
    out[mode + "_unknown_access"] = send(app, backend, signed(mode, secret, key_access="no-such-access-key"))
# A presigned URL is meant to be used again until it expires.
presigned = signed("v4query", secret)
out["v4query_first_use"] = send(app, backend, presigned)
out["v4query_second_use"] = send(app, backend, presigned)
# Without its own service token s3token is refused by idnode, as by current Keystone.
bare_app, bare_backend = pipeline(service_auth=False)
out["v4_without_service_auth"] = send(bare_app, bare_backend, signed("v4", secret))
print(json.dumps(out))
