#!/usr/bin/env python3
"""Self-test of the OpenFGA-API test server: every endpoint, paging, the >1000-object listing,
the faults, and the engine's answers against what the worked model (keystone.fga) says.

Run: python3 tests/openfga/selftest.py   (starts server.py itself; exits non-zero on a failure)
"""

import http.client
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOKEN = "selftest-token"
FAILURES = []


class Server:
    def __init__(self, *extra):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "server.py"), "--port", "0", "--token", TOKEN, "--max-seconds", "300",
             *extra], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        first = self.proc.stdout.readline().split()
        assert first[0] == "listening", first
        self.host, port = first[1].rsplit(":", 1)
        self.port = int(port)
        self.store_id = self.proc.stdout.readline().split()[1]
        self.model_id = self.proc.stdout.readline().split()[1]

    def call(self, method, path, body=None, token=TOKEN, raw=False):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        if raw:
            return resp.status, data, resp.getheader("Transfer-Encoding")
        return resp.status, (json.loads(data) if data else None)

    def api(self, endpoint, body=None, method="POST", **kw):
        return self.call(method, f"/stores/{self.store_id}/{endpoint}", body, **kw)

    def control(self, name, body=None):
        return self.call("POST" if body is not None else "GET", f"/_test/{name}", body)

    def stop(self):
        self.proc.stdin.close()  # the server exits when its stdin closes
        self.proc.wait(timeout=10)


def expect(name, got, want):
    if got != want:
        FAILURES.append(name)
        print(f"FAIL {name}: got {got!r}, want {want!r}")
    else:
        print(f"ok   {name}")


def tk(user, relation, obj):
    return {"user": user, "relation": relation, "object": obj}


def check(s, user, relation, obj, **extra):
    status, body = s.api("check", dict({"tuple_key": tk(user, relation, obj)}, **extra))
    return body["allowed"] if status == 200 else (status, body["code"])


def read_all(s, tuple_key=None, page_size=None):
    tuples, token, pages = [], "", 0
    while True:
        body = {"continuation_token": token}
        if tuple_key:
            body["tuple_key"] = tuple_key
        if page_size:
            body["page_size"] = page_size
        status, page = s.api("read", body)
        assert status == 200, page
        pages += 1
        tuples += [t["key"] for t in page["tuples"]]
        token = page["continuation_token"]
        if not token:
            return tuples, pages


def streamed(s, user, relation, obj_type):
    status, data, encoding = s.api("streamed-list-objects", {"user": user, "relation": relation, "type": obj_type},
                                   raw=True)
    lines = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
    return status, lines, encoding


def test_models_auth_store(s):
    status, body = s.api("authorization-models", method="GET")
    expect("authorization-models lists the model", (status, body["authorization_models"][0]["id"]), (200, s.model_id))
    expect("authorization-models has no next page", body["continuation_token"], "")
    types = {t["type"] for t in body["authorization_models"][0]["type_definitions"]}
    expect("model types", types, {"user", "group", "system", "domain", "project"})
    status, body = s.api(f"authorization-models/{s.model_id}", method="GET")
    expect("read one model", (status, body["authorization_model"]["id"]), (200, s.model_id))
    expect("no bearer token", s.api("read", {}, token=None), (401, {"code": "bearer_token_missing",
                                                                    "message": "missing bearer token"}))
    expect("wrong bearer token", s.api("read", {}, token="nope"), (401, {"code": "unauthenticated",
                                                                          "message": "unauthenticated"}))
    expect("malformed store id", s.call("POST", "/stores/nope/read", {})[0], 400)
    expect("unknown store", s.call("POST", "/stores/01ARZ3NDEKTSV4RRFFQ69G5FAV/read", {})[1]["code"],
           "store_id_not_found")
    expect("unknown model id", s.api("check", {"tuple_key": tk("user:a", "admin", "project:p"),
                                               "authorization_model_id": "01ARZ3NDEKTSV4RRFFQ69G5FAV"})[1]["code"],
           "authorization_model_not_found")


def test_write(s):
    grants = [tk("user:anne", "member", "group:devs"), tk("group:devs#member", "admin", "project:p1"),
              tk("user:bob", "reader", "project:p1"), tk("user:bob", "member", "domain:d1"),
              tk("user:carl", "admin", "system:all")]
    expect("write grants", s.api("write", {"writes": {"tuple_keys": grants}}), (200, {}))
    status, body = s.api("write", {"writes": {"tuple_keys": [grants[2]]}})
    expect("write existing tuple", (status, body["code"]), (400, "write_failed_due_to_invalid_input"))
    expect("write existing message", body["message"].startswith("cannot write a tuple which already exists: "
                                                                "user: 'user:bob', relation: 'reader'"), True)
    expect("write existing, on_duplicate ignore",
           s.api("write", {"writes": {"tuple_keys": [grants[2]], "on_duplicate": "ignore"}}), (200, {}))
    missing = tk("user:zed", "reader", "project:p1")
    status, body = s.api("write", {"deletes": {"tuple_keys": [missing]}})
    expect("delete missing tuple", (status, body["code"]), (400, "write_failed_due_to_invalid_input"))
    expect("delete missing message", body["message"].startswith("cannot delete a tuple which does not exist"), True)
    expect("delete missing, on_missing ignore",
           s.api("write", {"deletes": {"tuple_keys": [missing], "on_missing": "ignore"}}), (200, {}))
    status, body = s.api("write", {"writes": {"tuple_keys": [tk("user:anne", "owner", "project:p1")]}})
    expect("tuple outside the model", (status, body["code"]), (400, "validation_error"))
    status, body = s.api("write", {"writes": {"tuple_keys": [tk("project:p1", "admin", "project:p2")]}})
    expect("user type the relation does not allow", (status, body["code"]), (400, "validation_error"))
    status, body = s.api("write", {})
    expect("empty write", (status, body["code"]), (400, "invalid_write_input"))
    many = [tk(f"user:u{i}", "reader", "project:p9") for i in range(101)]
    expect("101 tuples in one write", s.api("write", {"writes": {"tuple_keys": many}})[1]["code"],
           "exceeded_entity_limit")
    status, body = s.api("write", {"writes": {"tuple_keys": [missing, missing]}})
    expect("duplicate in one request", body["code"], "cannot_allow_duplicate_tuples_in_one_request")
    status, _ = s.api("write", {"writes": {"tuple_keys": [tk("user:new", "reader", "project:p7")]},
                                "deletes": {"tuple_keys": [missing]}})
    expect("a failing delete writes nothing", (status, check(s, "user:new", "reader", "project:p7")), (400, False))


def test_check_and_batch(s):
    expect("direct grant", check(s, "user:bob", "reader", "project:p1"), True)
    expect("group-derived grant resolves", check(s, "user:anne", "admin", "project:p1"), True)
    expect("roles do not imply each other", check(s, "user:anne", "member", "project:p1"), False)
    expect("no grant", check(s, "user:bob", "admin", "project:p1"), False)
    expect("domain grant", check(s, "user:bob", "member", "domain:d1"), True)
    expect("system grant", check(s, "user:carl", "admin", "system:all"), True)
    expect("group itself holds the grant", check(s, "group:devs#member", "admin", "project:p1"), True)
    expect("contextual tuple counts", check(s, "user:dan", "reader", "project:p1", contextual_tuples={
        "tuple_keys": [tk("user:dan", "member", "group:devs")]}), False)
    expect("contextual membership resolves", check(s, "user:dan", "admin", "project:p1", contextual_tuples={
        "tuple_keys": [tk("user:dan", "member", "group:devs")]}), True)
    expect("contextual tuple is not stored", check(s, "user:dan", "admin", "project:p1"), False)
    expect("unknown relation", check(s, "user:bob", "owner", "project:p1"), (400, "validation_error"))
    # No caching: a revoke shows at once.
    s.api("write", {"deletes": {"tuple_keys": [tk("user:anne", "member", "group:devs")]}})
    expect("revoked membership", check(s, "user:anne", "admin", "project:p1"), False)
    s.api("write", {"writes": {"tuple_keys": [tk("user:anne", "member", "group:devs")]}})
    expect("restored membership", check(s, "user:anne", "admin", "project:p1"), True)

    checks = [{"tuple_key": tk("user:anne", rel, "project:p1"), "correlation_id": f"c-{rel}"}
              for rel in ("admin", "manager", "member", "reader")]
    checks.append({"tuple_key": tk("user:anne", "owner", "project:p1"), "correlation_id": "bad"})
    checks.append({"tuple_key": tk("user:eve", "reader", "project:p1"), "correlation_id": "ctx",
                   "contextual_tuples": {"tuple_keys": [tk("user:eve", "reader", "project:p1")]}})
    status, body = s.api("batch-check", {"checks": checks})
    expect("batch-check status", status, 200)
    allowed = {cid: r.get("allowed") for cid, r in body["result"].items()}
    expect("batch-check answers", allowed, {"c-admin": True, "c-manager": False, "c-member": False,
                                            "c-reader": False, "bad": None, "ctx": True})
    expect("batch-check item error", body["result"]["bad"]["error"]["input_error"], "validation_error")
    status, body = s.api("batch-check", {"checks": checks[:1] + checks[:1]})
    expect("duplicate correlation_id", (status, body["code"]), (400, "validation_error"))
    status, body = s.api("batch-check", {"checks": [dict(checks[0], correlation_id=f"x{i}") for i in range(51)]})
    expect("51 checks in one batch", (status, body["code"]), (400, "validation_error"))
    expect("empty batch", s.api("batch-check", {"checks": []})[0], 400)


def test_read(s):
    everything, _ = read_all(s)
    expect("read everything", len(everything), 5)
    rows, _ = read_all(s, {"object": "project:p1"})
    expect("read one object", sorted(r["user"] for r in rows), ["group:devs#member", "user:bob"])
    rows, _ = read_all(s, {"user": "user:anne", "object": "project:"})
    expect("direct read does not resolve groups", rows, [])
    rows, _ = read_all(s, {"user": "group:devs#member", "object": "project:"})
    expect("read by user and object type", rows, [tk("group:devs#member", "admin", "project:p1")])
    rows, _ = read_all(s, {"user": "user:bob", "relation": "reader", "object": "project:p1"})
    expect("read the exact relationship", rows, [tk("user:bob", "reader", "project:p1")])
    status, body = s.api("read", {"tuple_key": {"user": "user:bob"}})
    expect("read without object", (status, body["code"]), (400, "validation_error"))
    s.control("tuples", {"tuple_keys": [tk(f"user:p{i}", "reader", "project:paged") for i in range(23)]})
    rows, pages = read_all(s, {"object": "project:paged"}, page_size=5)
    expect("paged read: all tuples, once each", (len(rows), len({json.dumps(r) for r in rows}), pages), (23, 23, 5))
    status, body = s.api("read", {"tuple_key": {"object": "project:paged"}, "page_size": 5})
    status, other = s.api("read", {"tuple_key": {"object": "project:p1"},
                                   "continuation_token": body["continuation_token"]})
    expect("token of another query", (status, other["code"]), (400, "invalid_continuation_token"))
    expect("garbage token", s.api("read", {"continuation_token": "%%%"})[1]["code"], "invalid_continuation_token")
    expect("page_size over 100", s.api("read", {"page_size": 101})[0], 400)
    s.control("config", {"read_page_cap": 1})
    rows, pages = read_all(s, {"object": "project:paged"}, page_size=100)
    expect("read_page_cap: one tuple a page", (len(rows), pages), (23, 23))
    s.control("config", {"read_page_cap": 0})


def test_listing(s):
    status, body = s.api("list-objects", {"user": "user:anne", "relation": "admin", "type": "project"})
    expect("list-objects resolves groups", (status, body), (200, {"objects": ["project:p1"]}))
    status, lines, encoding = streamed(s, "user:anne", "admin", "project")
    expect("streamed-list-objects", (status, lines, encoding), (200, [{"result": {"object": "project:p1"}}], "chunked"))
    status, lines, _ = streamed(s, "user:anne", "owner", "project")
    expect("streamed unknown relation", status, 400)
    # More than 1000 matching objects: half granted directly, half through the group.
    bulk = [tk("user:anne" if i % 2 else "group:devs#member", "reader", f"project:big{i:05}") for i in range(1205)]
    bulk += [tk("user:bob", "reader", f"project:other{i}") for i in range(50)]
    started = time.monotonic()
    status, body = s.control("tuples", {"tuple_keys": bulk})
    expect("bulk seed", (status, body["written"]), (200, 1255))
    print(f"     bulk seed of 1255 tuples: {(time.monotonic() - started) * 1000:.0f} ms")
    held = len(s.control("tuples")[1]["tuples"])
    started = time.monotonic()
    status, body = s.api("list-objects", {"user": "user:anne", "relation": "reader", "type": "project"})
    list_ms = (time.monotonic() - started) * 1000
    expect("list-objects truncates at 1000", (status, len(body["objects"])), (200, 1000))
    started = time.monotonic()
    status, lines, _ = streamed(s, "user:anne", "reader", "project")
    stream_ms = (time.monotonic() - started) * 1000
    objects = {line["result"]["object"] for line in lines}
    expect("streamed-list-objects returns all 1205", (status, len(lines), len(objects)), (200, 1205, 1205))
    expect("streamed objects are the granted ones", objects, {f"project:big{i:05}" for i in range(1205)})
    print(f"     list-objects over {held} tuples: {list_ms:.0f} ms; streamed (1205 objects): {stream_ms:.0f} ms")
    s.control("config", {"list_objects_max_results": 10})
    expect("list_objects_max_results", len(s.api("list-objects", {"user": "user:anne", "relation": "reader",
                                                                   "type": "project"})[1]["objects"]), 10)
    s.control("config", {"list_objects_max_results": 1000})


def test_faults(s):
    s.control("reset", {"calls": True})
    s.control("faults", {"status": 429, "count": 2, "paths": ["check"]})
    statuses = [s.api("check", {"tuple_key": tk("user:bob", "reader", "project:p1")})[0] for _ in range(3)]
    expect("429 twice, then the answer", statuses, [429, 429, 200])
    expect("faults spent: auth is checked again", s.api("check", {}, token=None)[0], 401)
    s.control("faults", {"status": 429, "count": 1})
    expect("429 body", s.api("read", {}), (429, {"code": "resource_exhausted", "message": "injected fault: HTTP 429"}))
    s.control("faults", {"status": 503, "count": 1})
    status, body = s.api("read", {})
    expect("503 on any path", (status, body["code"]), (503, "unavailable"))
    s.control("faults", {"status": 500, "count": 1, "paths": ["write"]})
    expect("500 only on write", s.api("read", {})[0], 200)
    expect("500 on write", s.api("write", {"writes": {"tuple_keys": [tk("user:f", "reader", "project:p1")]}})[1],
           {"code": "internal_error", "message": "injected fault: HTTP 500"})
    expect("the faulted write stored nothing", check(s, "user:f", "reader", "project:p1"), False)
    s.control("faults", {"reset_connection": 1, "paths": ["batch-check"]})
    try:
        s.api("batch-check", {"checks": [{"tuple_key": tk("user:a", "reader", "project:p1"), "correlation_id": "a"}]})
        reset = False
    except (ConnectionError, http.client.HTTPException):
        reset = True
    expect("connection reset", reset, True)
    s.control("faults", {"delay_ms": 400, "count": 1, "paths": ["read"]})
    started = time.monotonic()
    status, _ = s.api("read", {"page_size": 1})
    expect("delayed answer", (status, time.monotonic() - started >= 0.4), (200, True))
    s.control("faults", {"stream_error_after": 1, "paths": ["streamed-list-objects"]})
    status, lines, _ = streamed(s, "user:anne", "reader", "project")
    expect("error inside the stream", (status, len(lines), "error" in lines[-1]), (200, 2, True))
    _, calls = s.control("calls")
    expect("calls counted per endpoint", {k: calls["calls"].get(k) for k in ("check", "read", "write", "batch-check")},
           {"check": 5, "read": 4, "write": 1, "batch-check": 1})
    expect("faults counted", calls["faults_fired"], {"check": 2, "read": 3, "write": 1, "batch-check": 1,
                                                     "streamed-list-objects": 1})


def test_concurrency(s):
    """The driver calls with up to max_concurrency requests in flight; answers must not mix."""
    import concurrent.futures
    cases = [("user:anne", "admin", "project:p1", True), ("user:bob", "reader", "project:p1", True),
             ("user:bob", "admin", "project:p1", False), ("user:carl", "admin", "system:all", True),
             ("user:anne", "reader", "project:p1", False)] * 2
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(10) as pool:
        got = list(pool.map(lambda c: check(s, *c[:3]), cases))
    print(f"     10 concurrent checks: {(time.monotonic() - started) * 1000:.0f} ms in all")
    expect("10 concurrent checks", got, [c[3] for c in cases])


def timings(s):
    """Per-call latency of the engine-backed endpoints (the small store, then after the bulk seed)."""
    def measure(label, fn, n):
        started = time.monotonic()
        for _ in range(n):
            fn()
        ms = (time.monotonic() - started) * 1000 / n
        print(f"     timing: {label}: {ms:.0f} ms per call ({n} calls)")
        return ms

    tuples = len(s.control("tuples")[1]["tuples"])
    batch = {"checks": [{"tuple_key": tk("user:anne", rel, "project:p1"), "correlation_id": rel}
                        for rel in ("admin", "manager", "member", "reader")]}
    measure(f"check, {tuples} tuples", lambda: check(s, "user:anne", "admin", "project:p1"), 20)
    measure(f"batch-check of 4, {tuples} tuples", lambda: s.api("batch-check", batch), 10)
    measure(f"streamed-list-objects, {tuples} tuples", lambda: streamed(s, "user:bob", "reader", "domain"), 10)
    measure(f"write, {tuples} tuples", lambda: s.api("write", {"writes": {
        "tuple_keys": [tk("user:t", "reader", "project:t")], "on_duplicate": "ignore"}}), 10)
    measure(f"read page, {tuples} tuples", lambda: s.api("read", {"page_size": 100}), 10)


def test_two_kinds():
    """keystone-kinds.fga: a second type name for users and projects, with fixed ids."""
    store, model = "01ARZ3NDEKTSV4RRFFQ69G5FAV", "01ARZ3NDEKTSV4RRFFQ69G5FAW"
    s = Server("--model", os.path.join(HERE, "keystone-kinds.fga"), "--store-id", store, "--model-id", model)
    try:
        expect("fixed store and model ids", (s.store_id, s.model_id), (store, model))
        s.api("write", {"writes": {"tuple_keys": [tk("keystone_user:k1", "member", "group:g"),
                                                  tk("group:g#member", "admin", "tenant:t1"),
                                                  tk("user:u1", "admin", "project:t1")]}})
        expect("second user type through a group", check(s, "keystone_user:k1", "admin", "tenant:t1"), True)
        expect("types are distinct objects", check(s, "user:u1", "admin", "tenant:t1"), False)
        status, lines, _ = streamed(s, "keystone_user:k1", "admin", "tenant")
        expect("listing the second project type", lines, [{"result": {"object": "tenant:t1"}}])
    finally:
        s.stop()


def main():
    test_two_kinds()
    s = Server()
    try:
        test_models_auth_store(s)
        test_write(s)
        test_check_and_batch(s)
        test_read(s)
        test_concurrency(s)
        timings(s)
        test_listing(s)
        timings(s)
        test_faults(s)
        s.control("reset", {})
        expect("reset empties the store", s.control("tuples")[1]["tuples"], [])
    finally:
        s.stop()
    print(f"{len(FAILURES)} failure(s)" if FAILURES else "all passed")
    sys.exit(1 if FAILURES else 0)


if __name__ == "__main__":
    main()
