"""Runs scim2-tester's whole check suite against idnode's SCIM v2 endpoint (/SCIM/v2/{domain_id}).

scim2-tester (a third-party SCIM conformance suite) drives the server through scim2-client, whose
models are built from what the server publishes on /ServiceProviderConfig, /Schemas and
/ResourceTypes. The verdict is left to the Rust test: this script always exits 0 once it could
print its summary.

usage: scim_tester.py --base-url http://127.0.0.1:PORT/SCIM/v2/DOMAIN --token kscim_...
                      [--timeout SECONDS] [--request-timeout SECONDS] [--exclude-tag TAG ...]
--exclude-tag TAG: every check still runs, but the results of the checks tagged TAG count as
skipped (their original status is kept in "reason"). Tags: discovery, service-provider-config,
resource-types, schemas, misc, crud:create, crud:read, crud:read:attributes, crud:update,
crud:delete, patch:add, patch:remove, patch:replace. Run it on a fresh, empty domain: the list
check expects the resource it just created on the first page (default count).

stdout: ONE JSON object
  {"passed": n, "failed": n, "skipped": n,
   "failures": [{"title", "resource_type", "urn", "status", "reason", "description", "data"}],
   "checks": [{"title", "resource_type", "urn", "status", "reason"}],
   "resource_types": [names the CRUD/PATCH checks ran on], "elapsed_s": s}
If discovery fails, scim2-tester stops after the discovery checks: assert on "resource_types"
(["Group", "User"]) and on the number of checks, not only on "failed" == 0.
A check function may report several results (one per PATCH path, per HTTP method, ...): every
result is one entry of "checks". SUCCESS/COMPLIANT/ACCEPTABLE count as passed, SKIPPED as
skipped, anything else (ERROR, CRITICAL, DEVIATION) as failed.

scim2-client 0.13 ships its network engine for httpx2 only (scim2_client.engines.httpx2), which is
not installed: HttpxSCIMClient below is the same three-method engine over httpx, which is.
"""
import argparse
import json
import os
import sys
import threading
import time
import traceback
from typing import Any

# Loopback only: no proxy may sit between the client and the server.
for _k in [k for k in os.environ if k.lower().endswith("_proxy")]:
    del os.environ[_k]

import httpx  # noqa: E402
from scim2_client import BaseSyncSCIMClient, RequestNetworkException  # noqa: E402
from scim2_models import BaseModel  # noqa: E402

PASSED = {"SUCCESS", "COMPLIANT", "ACCEPTABLE"}
SKIPPED = {"SKIPPED"}
# What scim2-client defines (scim2_client.client.BASE_HEADERS) but never sends by itself:
# without it httpx labels JSON bodies application/json.
SCIM_HEADERS = {"Accept": "application/scim+json", "Content-Type": "application/scim+json"}


class DeadlineExceeded(Exception):
    """The whole run went over --timeout: every further request fails at once."""


class HttpxSCIMClient(BaseSyncSCIMClient):
    """scim2-client's synchronous engine over an httpx.Client (mirrors engines/httpx2.py)."""

    def __init__(self, client: httpx.Client, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.client = client

    def _stays_under_base_url(self, endpoint: str) -> bool:
        # The resource type endpoints come from the server: requests (and the bearer token)
        # must not leave the base URL.
        base = self.client.base_url
        try:
            url = self.client.build_request("GET", endpoint).url
        except httpx.InvalidURL:
            return False
        same_origin = (url.scheme, url.host, url.port) == (base.scheme, base.host, base.port)
        return base.is_absolute_url and same_origin and url.raw_path.startswith(base.raw_path)

    def _parse_json(self, response: Any) -> Any:
        return response.json()

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        try:
            return self.client.request(method, url, **kwargs)
        except (httpx.RequestError, DeadlineExceeded) as exc:
            network_exc = RequestNetworkException()
            network_exc.add_note(f"{type(exc).__name__}: {exc}")
            raise network_exc from exc


def make_client(base_url: str, token: str, request_timeout: float = 30.0,
                deadline: float | None = None) -> HttpxSCIMClient:
    """An undiscovered scim2-client on `base_url`, authenticated with the API key `token`.

    No retries (httpx makes none); `deadline` (time.monotonic()) makes every later request fail.
    """
    def check_deadline(_request: httpx.Request) -> None:
        if deadline is not None and time.monotonic() > deadline:
            raise DeadlineExceeded("scim_tester.py --timeout exceeded")

    http = httpx.Client(
        base_url=base_url.rstrip("/"),
        headers={**SCIM_HEADERS, "Authorization": f"Bearer {token}"},
        timeout=request_timeout,
        trust_env=False,
        event_hooks={"request": [check_deadline]},
    )
    return HttpxSCIMClient(http)


def jsonable(value: Any, depth: int = 0) -> Any:
    """Debug data of a check result (models, httpx responses, exceptions...) as plain JSON."""
    if depth > 6:
        return repr(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, BaseModel):
        try:
            return value.model_dump(mode="json")
        except Exception:  # a model the server sent back half-valid
            return repr(value)
    if isinstance(value, httpx.Response):
        try:
            body = value.json()
        except ValueError:
            body = value.text[:2000]
        return {"status_code": value.status_code, "url": str(value.request.url),
                "method": value.request.method, "body": body}
    if isinstance(value, BaseException):
        out = {"exception": type(value).__name__, "message": str(value)}
        source = getattr(value, "source", None)
        if source is not None:
            out["source"] = jsonable(source, depth + 1)
        return out
    if isinstance(value, dict):
        return {str(k): jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v, depth + 1) for v in value]
    return repr(value)


def excluded(tags: set, exclude_tags: set) -> bool:
    """scim2-tester's tag hierarchy ('patch' covers 'patch:add'), minus its catch-all '*'."""
    return any(t == x or x in t.split(":") for t in tags for x in exclude_tags)


def summarize(results: list, elapsed: float, exclude_tags: set | None = None) -> dict:
    summary = {"passed": 0, "failed": 0, "skipped": 0, "failures": [], "checks": [],
               "resource_types": sorted({r.resource_type for r in results if r.resource_type}),
               "elapsed_s": round(elapsed, 3)}
    for r in results:
        status = r.status.name
        if exclude_tags and excluded(r.tags, exclude_tags):
            status, r.reason = "SKIPPED", f"excluded by --exclude-tag ({r.status.name}: {r.reason})"
        # PATCH checks report one result per attribute: "urn" names it (e.g. "members").
        urn = r.data.get("urn") if isinstance(r.data, dict) else None
        entry = {"title": r.title, "resource_type": r.resource_type, "urn": urn, "status": status,
                 "reason": r.reason}
        summary["checks"].append(entry)
        if status in PASSED:
            summary["passed"] += 1
        elif status in SKIPPED:
            summary["skipped"] += 1
        else:
            summary["failed"] += 1
            summary["failures"].append({
                "title": r.title, "resource_type": r.resource_type, "urn": urn, "status": status,
                "reason": r.reason, "description": (r.description or "").strip().split("\n")[0],
                "data": jsonable(r.data),
            })
    return summary


def run(base_url: str, token: str, timeout: float, request_timeout: float,
        exclude_tags: set[str] | None = None) -> dict:
    from scim2_tester import check_server

    started = time.monotonic()
    client = make_client(base_url, token, request_timeout, deadline=started + timeout)
    outcome: dict = {}

    def target() -> None:
        try:
            # raise_exceptions=False: scim2-tester's @checker turns any exception of a check
            # into an ERROR result, so one broken check does not stop the suite.
            # check_server(exclude_tags=...) is not used: in 0.5.2 it also skips the '*'-tagged
            # discovery queries, and the suite then stops before any resource check.
            outcome["results"] = check_server(client, raise_exceptions=False)
        except BaseException as exc:  # a bug outside the per-check guard
            outcome["crash"] = exc
            outcome["traceback"] = traceback.format_exc()

    # The deadline hook makes every request fail fast once exceeded; the join bound is a last
    # resort in case the library loops without requests.
    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(timeout + request_timeout + 30)
    elapsed = time.monotonic() - started

    if worker.is_alive():
        summary = summarize([], elapsed)
        summary["failed"] = 1
        summary["failures"].append({"title": "scim_tester.py",
                                    "reason": f"suite still running after {elapsed:.0f}s"})
        return summary
    if "crash" in outcome:
        print(outcome["traceback"], file=sys.stderr)
        summary = summarize([], elapsed)
        summary["failed"] = 1
        summary["failures"].append({"title": "check_server", "reason": f"{type(outcome['crash']).__name__}: "
                                    f"{outcome['crash']}", "data": outcome["traceback"]})
        return summary
    summary = summarize(outcome["results"], elapsed, exclude_tags)
    if elapsed > timeout:
        summary["failed"] += 1
        summary["failures"].append({"title": "scim_tester.py", "reason": f"--timeout {timeout}s exceeded"})
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base-url", required=True, help="e.g. http://127.0.0.1:PORT/SCIM/v2/DOMAIN_ID")
    ap.add_argument("--token", required=True, help="SCIM API key (kscim_...), sent as a bearer token")
    ap.add_argument("--timeout", type=float, default=300.0, help="bound on the whole suite, seconds")
    ap.add_argument("--request-timeout", type=float, default=20.0, help="per HTTP request, seconds")
    ap.add_argument("--exclude-tag", action="append", default=[],
                    help="count the results of checks with this tag as skipped (repeatable)")
    args = ap.parse_args()
    summary = run(args.base_url, args.token, args.timeout, args.request_timeout, set(args.exclude_tag))
    print(json.dumps(summary, indent=1, sort_keys=False, default=repr))
    sys.exit(0)


if __name__ == "__main__":
    main()
