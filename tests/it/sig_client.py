"""Signs a request with botocore, as a real client would, and prints the `credentials` object
that /v3/sigtokens expects. Used by tests/it/catalog_credentials.rs.

usage: sig_client.py BASE_URL ACCESS SECRET MODE   (MODE: v4 | v4query | v2post | v2get)
"""
import json
import sys
import uuid
from urllib.parse import parse_qsl, urlsplit

from botocore.auth import SigV2Auth, SigV4Auth, SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

base, access, secret, mode = sys.argv[1:5]
creds = Credentials(access, secret)
# Every signer here adds its timestamp (X-Amz-Date for V4, Timestamp for V2), which idnode
# requires. ClientToken (EC2's idempotency token) makes two requests signed within the same
# second differ: idnode accepts each signature once.
ops = {"Action": "DescribeInstances", "Version": "2016-11-15", "Filter.1.Name": "tag:Name", "Filter.1.Value.1": "web a/b",
       "ClientToken": uuid.uuid4().hex}

if mode in ("v4", "v4query"):
    req = AWSRequest(method="GET", url=base + "/", params=dict(ops))
    cls = SigV4Auth if mode == "v4" else SigV4QueryAuth
    signer = cls(creds, "ec2", "RegionOne")
    signer.add_auth(req)
    split = urlsplit(req.url)
    # SigV4Auth signs `req.params`; SigV4QueryAuth moves them, with its own, into the URL.
    params = dict(req.params)
    params.update(parse_qsl(split.query, keep_blank_values=True))
    headers = {k: v for k, v in req.headers.items()}
    headers["host"] = split.netloc
    if mode == "v4":
        signature = headers["Authorization"].split("Signature=")[1]
    else:
        signature = params.pop("X-Amz-Signature")
    out = {
        "access": access, "signature": signature, "host": split.netloc, "verb": "GET",
        "path": split.path or "/", "params": params, "headers": headers, "body_hash": signer.payload(req),
    }
elif mode in ("v2post", "v2get"):
    if mode == "v2post":
        req = AWSRequest(method="POST", url=base + "/", data=dict(ops))
    else:
        req = AWSRequest(method="GET", url=base + "/services/Cloud", params=dict(ops))
    SigV2Auth(creds).add_auth(req)
    params = dict(req.data if mode == "v2post" else req.params)
    signature = params.pop("Signature")
    split = urlsplit(req.url)
    out = {
        "access": access, "signature": signature, "host": split.netloc, "verb": req.method,
        "path": split.path or "/", "params": params, "headers": {},
    }
else:
    sys.exit("unknown mode " + mode)

print(json.dumps(out))
