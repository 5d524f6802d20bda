#!/usr/bin/env python3
"""An OpenFGA-API test server whose every answer about relations comes from OpenFGA's own engine.

It keeps the store's tuples itself (write, delete, read with paging) and answers check,
batch-check, list-objects and streamed-list-objects by running `fga model test` (the OpenFGA
CLI's embedded engine) over the model and the current tuples. It is a test double for the
assignment driver's tests, not an OpenFGA deployment: one store, one model, tuples in memory.

Test-only control endpoints live under /_test/ (faults, call counts, bulk tuples, reset).
Standard library only; the engine is the `fga` binary (see README.md).
"""

import argparse
import base64
import hashlib
import http.server
import json
import os
import re
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone

# The embedded engine's ListObjects stops at this many objects (OpenFGA's default
# listObjectsMaxResults, which the CLI does not change).
ENGINE_LIST_CAP = 1000
STORE_ID_RE = re.compile(r"^[ABCDEFGHJKMNPQRSTVWXYZ0-9]{26}$")
CORRELATION_ID_RE = re.compile(r"^[\w\d-]{1,36}$")
ENGINE_ERROR_RE = re.compile(r"code = Code\((\d+)\) desc = (.*)$", re.S)

# OpenFGA's numeric error codes (openfga/api errors_ignore.proto) by name, for the error body.
ERROR_NAMES = {
    1010: "bearer_token_missing", 1500: "unauthenticated", 1600: "forbidden",
    2000: "validation_error", 2001: "authorization_model_not_found",
    2002: "authorization_model_resolution_too_complex", 2003: "invalid_write_input",
    2004: "cannot_allow_duplicate_tuples_in_one_request", 2007: "invalid_continuation_token",
    2008: "invalid_tuple_set", 2009: "invalid_check_input", 2011: "unsupported_user_set",
    2012: "invalid_object_format", 2017: "write_failed_due_to_invalid_input",
    2020: "latest_authorization_model_not_found", 2021: "type_not_found",
    2022: "relation_not_found", 2025: "invalid_user", 2027: "invalid_tuple",
    2028: "unknown_relation", 2039: "page_size_invalid", 2053: "exceeded_entity_limit",
    2054: "invalid_contextual_tuple", 2055: "duplicate_contextual_tuple",
    3500: "throttled_timeout_error", 4000: "internal_error", 4004: "deadline_exceeded",
    4006: "resource_exhausted", 4010: "unavailable", 5000: "undefined_endpoint",
    5002: "store_id_not_found",
}
# The error code a fault answers with, by HTTP status.
FAULT_CODES = {
    400: "validation_error", 401: "unauthenticated", 403: "forbidden", 404: "undefined_endpoint",
    409: "10", 422: "throttled_timeout_error", 429: "resource_exhausted",
    500: "internal_error", 502: "internal_error", 503: "unavailable", 504: "deadline_exceeded",
}
DEFAULT_CONFIG = {
    "list_objects_max_results": 1000,
    "read_default_page_size": 50,
    "read_page_cap": 0,  # 0: no cap below the requested page_size
    "max_checks_per_batch_check": 50,
    "max_tuples_per_write": 100,
}


class ApiError(Exception):
    """An OpenFGA error answer: HTTP status and the {"code","message"} body."""

    def __init__(self, status, code, message):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message

    def body(self):
        return {"code": self.code, "message": self.message}


def validation(message, code="validation_error"):
    return ApiError(400, code, message)


def engine_error(text):
    """Turns the engine's `rpc error: code = Code(N) desc = ...` into the API error OpenFGA sends."""
    m = ENGINE_ERROR_RE.search(text)
    if not m:
        return ApiError(500, "internal_error", text.strip() or "engine failed")
    num, desc = int(m.group(1)), m.group(2).strip()
    name = ERROR_NAMES.get(num, "internal_error")
    if 2000 <= num < 3000:
        return ApiError(400, name, desc)
    if 5000 <= num < 6000:
        return ApiError(404, name, desc)
    if num == 3500:
        return ApiError(422, name, desc)
    return ApiError(500, name, desc)


def new_ulid():
    """A ULID (48-bit milliseconds + 80 random bits, Crockford base32), OpenFGA's id format."""
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    value = (int(time.time() * 1000) << 80) | secrets.randbits(80)
    return "".join(alphabet[(value >> (5 * i)) & 31] for i in reversed(range(26)))


def now_rfc3339():
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def tuple_id(key):
    return (key["user"], key["relation"], key["object"])


def clean_key(key, with_condition=True):
    """A tuple key as OpenFGA stores it: user, relation, object and an optional condition."""
    if not isinstance(key, dict):
        raise validation("invalid tuple key: expected an object")
    out = {}
    for field in ("user", "relation", "object"):
        value = key.get(field)
        if not isinstance(value, str) or not value:
            raise validation(f"invalid TupleKey.{field.capitalize()}: value length must be at least 1 bytes")
        out[field] = value
    if with_condition and key.get("condition"):
        out["condition"] = key["condition"]
    return out


class Engine:
    """Runs `fga model test` over the model and a tuple set; one process per call, nothing cached."""

    def __init__(self, fga, model_text, workdir):
        self.fga, self.model_text, self.workdir = fga, model_text, workdir

    def run(self, tuples, tests, verbose=True):
        spec = {"name": "idnode", "model": self.model_text, "tuples": tuples, "tests": tests}
        fd, path = tempfile.mkstemp(suffix=".json", dir=self.workdir)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(spec, f)
            args = [self.fga, "model", "test", "--tests", path]
            if verbose:
                # The JSON report (stdout) has no error texts: those come from the summary (stderr).
                args.append("--verbose")
            proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
        finally:
            os.unlink(path)
        if verbose and proc.stdout.strip():
            return json.loads(proc.stdout), proc.stderr
        if "error running tests" in proc.stderr or (verbose and proc.returncode != 0):
            raise engine_error(proc.stderr)
        return None, proc.stderr

    def validate(self, tuples):
        """OpenFGA's write-time validation of tuples against the model (the engine's own Write)."""
        if tuples:
            self.run(tuples, [{"name": "validate"}])

    def checks(self, groups):
        """groups: list of (contextual tuples, [(user, relation, object, context)]).

        Returns {(group index, user, relation, object): allowed bool or ApiError}."""
        tests = []
        for index, (tuples, items) in enumerate(groups):
            entries = {}
            for user, relation, obj, context in items:
                entry = entries.setdefault((user, obj, json.dumps(context, sort_keys=True)),
                                           {"user": user, "object": obj, "assertions": {}})
                if context:
                    entry["context"] = context
                entry["assertions"][relation] = True
            tests.append({"name": f"g{index}", "tuples": tuples, "check": list(entries.values())})
        # Each test holds its own tuples (stored + that group's contextual ones): the engine
        # builds one store per test, so the global tuple list stays empty.
        report, stderr = self.run([], tests)
        answers = {}
        for index, test in enumerate(report or []):
            for result in test.get("check_results") or []:
                req = result["request"]
                key = (index, req["user"], req["relation"], req["object"])
                if result.get("got") is None:
                    answers[key] = self._item_error(stderr, "Check", req, "object")
                else:
                    answers[key] = bool(result["got"])
        return answers

    def list_objects(self, tuples, user, relation, obj_type, context):
        """The engine's ListObjects answer (capped at ENGINE_LIST_CAP)."""
        entry = {"user": user, "type": obj_type, "assertions": {relation: []}}
        if context:
            entry["context"] = context
        report, stderr = self.run(tuples, [{"name": "list", "list_objects": [entry]}])
        result = report[0]["list_objects_results"][0]
        if result.get("got") is None:
            raise self._item_error(stderr, "ListObjects", result["request"], "type")
        return list(result["got"])

    def check_candidates(self, tuples, user, relation, candidates, context):
        """Model-resolved checks of many objects in one engine call, for listings past the
        engine's ListObjects cap. The verbose report repeats every tuple per check, so this
        reads the plain summary instead: every check expects true, the failures are the denials."""
        entries = []
        for obj in candidates:
            entry = {"user": user, "object": obj, "assertions": {relation: True}}
            if context:
                entry["context"] = context
            entries.append(entry)
        _, stderr = self.run(tuples, [{"name": "candidates", "check": entries}], verbose=False)
        denied = set()
        prefix = f"ⅹ Check(user={user},relation={relation},object="
        for line in stderr.splitlines():
            if not line.startswith(prefix):
                continue
            head, _, tail = line[len(prefix):].partition("): expected=true, got=")
            if tail.startswith("false"):
                denied.add(head)
            else:
                raise engine_error(tail)
        m = re.search(r"^Checks (\d+)/(\d+) passing", stderr, re.M)
        if not m or int(m.group(2)) != len(candidates) or int(m.group(1)) != len(candidates) - len(denied):
            raise ApiError(500, "internal_error", "engine summary did not cover every candidate")
        return [obj for obj in candidates if obj not in denied]

    @staticmethod
    def _item_error(stderr, kind, req, last):
        prefix = f"ⅹ {kind}(user={req['user']},relation={req['relation']},{last}={req[last]}): "
        for line in stderr.splitlines():
            if line.startswith(prefix) and "error=" in line:
                return engine_error(line.split("error=", 1)[1])
        return ApiError(500, "internal_error", "engine gave no answer")


class Store:
    """The one store's tuples, with insertion sequence numbers for stable read paging."""

    def __init__(self):
        self.lock = threading.Lock()
        self.tuples = {}  # (user, relation, object) -> {"seq", "key", "timestamp"}
        self.seq = 0

    def snapshot(self):
        with self.lock:
            return [t["key"] for t in sorted(self.tuples.values(), key=lambda t: t["seq"])]

    def insert(self, key):
        self.seq += 1
        self.tuples[tuple_id(key)] = {"seq": self.seq, "key": key, "timestamp": now_rfc3339()}


class State:
    def __init__(self, args, engine, model_json):
        self.store_id, self.model_id = args.store_id, args.model_id
        self.token = args.token
        self.engine, self.store = engine, Store()
        self.model = dict(model_json, id=self.model_id)
        self.model.setdefault("conditions", {})
        self.config = dict(DEFAULT_CONFIG, list_objects_max_results=args.list_objects_max_results)
        self.lock = threading.Lock()
        self.faults, self.calls, self.fired, self.requests = [], {}, {}, []


# ---------------------------------------------------------------- OpenFGA endpoints


def check_model_id(state, body):
    model_id = body.get("authorization_model_id")
    if model_id and model_id != state.model_id:
        raise validation(f"Authorization Model '{model_id}' not found", "authorization_model_not_found")


def contextual(body):
    keys = (body.get("contextual_tuples") or {}).get("tuple_keys") or []
    if len(keys) > 100:
        raise validation("invalid ContextualTupleKeys.TupleKeys: value must contain no more than 100 item(s)")
    return [clean_key(k) for k in keys]


def with_contextual(stored, extra):
    """Stored tuples plus contextual ones (a contextual tuple equal to a stored one adds nothing)."""
    seen = {tuple_id(k) for k in stored}
    return stored + [k for k in extra if tuple_id(k) not in seen and not seen.add(tuple_id(k))]


def check_tuple_key(body):
    key = body.get("tuple_key")
    if not isinstance(key, dict):
        raise validation("invalid CheckRequest.TupleKey: value is required")
    return clean_key(key, with_condition=False)


def api_check(state, body):
    check_model_id(state, body)
    key = check_tuple_key(body)
    tuples = with_contextual(state.store.snapshot(), contextual(body))
    item = (key["user"], key["relation"], key["object"], body.get("context") or {})
    answer = state.engine.checks([(tuples, [item])])[(0, *item[:3])]
    if isinstance(answer, ApiError):
        raise answer
    return {"allowed": answer, "resolution": ""}


def api_batch_check(state, body):
    check_model_id(state, body)
    checks = body.get("checks")
    if not isinstance(checks, list) or not checks:
        raise validation("invalid BatchCheckRequest.Checks: value must contain at least 1 item(s)")
    limit = state.config["max_checks_per_batch_check"]
    if len(checks) > limit:
        raise validation(f"batchCheck received {len(checks)} checks, the maximum allowed is {limit}")
    stored = state.store.snapshot()
    groups, group_of, items, seen = [], {}, [], set()
    for check in checks:
        cid = check.get("correlation_id") if isinstance(check, dict) else None
        if not isinstance(cid, str) or not CORRELATION_ID_RE.match(cid):
            raise validation("invalid BatchCheckItem.CorrelationId: letters, digits or hyphens, 1 to 36 characters")
        if cid in seen:
            raise validation(f"duplicate correlation_id provided: {cid}")
        seen.add(cid)
        key = check_tuple_key(check)
        extra = contextual(check)
        # One engine test per distinct (contextual tuples, context): answers are keyed by
        # (test, user, relation, object).
        marker = json.dumps([sorted(tuple_id(k) for k in extra), check.get("context") or {}], sort_keys=True)
        if marker not in group_of:
            group_of[marker] = len(groups)
            groups.append((with_contextual(stored, extra), []))
        index = group_of[marker]
        item = (key["user"], key["relation"], key["object"], check.get("context") or {})
        groups[index][1].append(item)
        items.append((cid, index, item))
    answers = state.engine.checks(groups)
    result = {}
    for cid, index, item in items:
        answer = answers.get((index, *item[:3]), ApiError(500, "internal_error", "engine gave no answer"))
        if isinstance(answer, ApiError):
            kind = "internal_error" if answer.status >= 500 else "input_error"
            result[cid] = {"error": {kind: answer.code, "message": answer.message}}
        else:
            result[cid] = {"allowed": answer}
    return {"result": result}


def list_request(body):
    for field in ("type", "relation", "user"):
        if not isinstance(body.get(field), str) or not body[field]:
            raise validation(f"invalid ListObjectsRequest.{field.capitalize()}: value length must be at least 1 bytes")
    return body["user"], body["relation"], body["type"], body.get("context") or {}


def all_objects(state, body, limit=None):
    """Every object of the type the user has the relation with, as the engine resolves it.

    The engine's ListObjects stops at ENGINE_LIST_CAP; when it reaches that and more are
    wanted, every object of the type that appears in a tuple is checked instead."""
    user, relation, obj_type, context = list_request(body)
    tuples = with_contextual(state.store.snapshot(), contextual(body))
    objects = state.engine.list_objects(tuples, user, relation, obj_type, context)
    if len(objects) >= ENGINE_LIST_CAP and (limit is None or limit > len(objects)):
        candidates = sorted({k["object"] for k in tuples if k["object"].startswith(obj_type + ":")})
        objects = state.engine.check_candidates(tuples, user, relation, candidates, context)
    return objects


def api_list_objects(state, body):
    check_model_id(state, body)
    limit = state.config["list_objects_max_results"]
    return {"objects": all_objects(state, body, limit)[:limit]}


def api_streamed_list_objects(state, body):
    """Returns the lines of the stream (the handler writes them chunked)."""
    check_model_id(state, body)
    return [{"result": {"object": obj}} for obj in all_objects(state, body)]


def read_filter(body):
    key = body.get("tuple_key") or {}
    user, relation, obj = key.get("user") or "", key.get("relation") or "", key.get("object") or ""
    if not (user or relation or obj):
        return None
    if not obj:
        raise validation("invalid 'tuple_key': the object field is required when a tuple_key is given")
    obj_type, _, obj_id = obj.partition(":")
    if not obj_id and not user:
        raise validation("invalid 'tuple_key': an object type alone needs the user field")
    return user, relation, obj if obj_id else obj_type + ":"


def read_matches(flt, key):
    if flt is None:
        return True
    user, relation, obj = flt
    if obj.endswith(":"):
        if not key["object"].startswith(obj):
            return False
    elif key["object"] != obj:
        return False
    return (not relation or key["relation"] == relation) and (not user or key["user"] == user)


def api_read(state, body):
    flt = read_filter(body)
    page_size = body.get("page_size") or state.config["read_default_page_size"]
    if not isinstance(page_size, int) or not 1 <= page_size <= 100:
        raise validation("invalid ReadRequest.PageSize: value must be inside range [1, 100]")
    if state.config["read_page_cap"]:
        page_size = min(page_size, state.config["read_page_cap"])
    digest = hashlib.sha256(json.dumps(flt).encode()).hexdigest()[:16]
    after = 0
    if body.get("continuation_token"):
        try:
            token = json.loads(base64.urlsafe_b64decode(body["continuation_token"].encode()))
            after = int(token["after"])
            if token["filter"] != digest:
                raise ValueError("filter changed")
        except (ValueError, KeyError, TypeError):
            raise validation("Invalid continuation token", "invalid_continuation_token") from None
    with state.store.lock:
        rows = sorted((t for t in state.store.tuples.values()
                       if t["seq"] > after and read_matches(flt, t["key"])), key=lambda t: t["seq"])
    page = rows[:page_size]
    token = ""
    if len(rows) > page_size:
        raw = json.dumps({"after": page[-1]["seq"], "filter": digest}).encode()
        token = base64.urlsafe_b64encode(raw).decode()
    return {"tuples": [{"key": t["key"], "timestamp": t["timestamp"]} for t in page],
            "continuation_token": token}


def api_write(state, body):
    check_model_id(state, body)
    writes_part, deletes_part = body.get("writes") or {}, body.get("deletes") or {}
    writes = [clean_key(k) for k in writes_part.get("tuple_keys") or []]
    deletes = [clean_key(k, with_condition=False) for k in deletes_part.get("tuple_keys") or []]
    if not writes and not deletes:
        raise validation("Invalid input. Make sure you provide at least one write or delete", "invalid_write_input")
    limit = state.config["max_tuples_per_write"]
    if len(writes) + len(deletes) > limit:
        raise validation(f"The number of write operations exceeds the allowed limit of {limit}", "exceeded_entity_limit")
    seen = set()
    for key in writes + deletes:
        if tuple_id(key) in seen:
            raise validation("duplicate tuple in write: user: '{}', relation: '{}', object: '{}'".format(*tuple_id(key)),
                             "cannot_allow_duplicate_tuples_in_one_request")
        seen.add(tuple_id(key))
    state.engine.validate(writes)
    ignore_duplicate = writes_part.get("on_duplicate") == "ignore"
    ignore_missing = deletes_part.get("on_missing") == "ignore"
    store = state.store
    with store.lock:
        for key in deletes:
            if tuple_id(key) not in store.tuples and not ignore_missing:
                raise invalid_write_input("delete a tuple which does not exist", key)
        for key in writes:
            existing = store.tuples.get(tuple_id(key))
            if existing and not (ignore_duplicate and existing["key"].get("condition") == key.get("condition")):
                raise invalid_write_input("write a tuple which already exists", key)
        for key in deletes:
            store.tuples.pop(tuple_id(key), None)
        for key in writes:
            if tuple_id(key) not in store.tuples:
                store.insert(key)
    return {}


def invalid_write_input(what, key):
    user, relation, obj = tuple_id(key)
    return validation(f"cannot {what}: user: '{user}', relation: '{relation}', object: '{obj}': "
                      "tuple to be written already existed or the tuple to be deleted did not exist",
                      "write_failed_due_to_invalid_input")


def api_models(state, _body):
    return {"authorization_models": [state.model], "continuation_token": ""}


def api_model(state, _body, model_id):
    if model_id != state.model_id:
        raise ApiError(404, "authorization_model_not_found", f"Authorization Model '{model_id}' not found")
    return {"authorization_model": state.model}


ROUTES = {
    ("POST", "check"): api_check,
    ("POST", "batch-check"): api_batch_check,
    ("POST", "read"): api_read,
    ("POST", "write"): api_write,
    ("POST", "list-objects"): api_list_objects,
    ("POST", "streamed-list-objects"): api_streamed_list_objects,
    ("GET", "authorization-models"): api_models,
}

# ---------------------------------------------------------------- test control


def control(state, method, name, body):
    """The /_test/ endpoints: faults, call counts, recent requests, bulk tuples, config, reset."""
    with state.lock:
        if (method, name) == ("POST", "faults"):
            rule = {"paths": body.get("paths") or [], "status": body.get("status"),
                    "reset": int(body.get("reset_connection") or 0), "delay_ms": int(body.get("delay_ms") or 0),
                    "stream_error_after": body.get("stream_error_after")}
            rule["count"] = rule["reset"] or int(body.get("count") or 1)
            state.faults.append(rule)
            return 200, {"faults": state.faults}
        if (method, name) == ("GET", "faults"):
            return 200, {"faults": state.faults}
        if (method, name) == ("GET", "calls"):
            return 200, {"calls": state.calls, "faults_fired": state.fired}
        if (method, name) == ("GET", "requests"):
            return 200, {"requests": state.requests}
        if name == "config":
            if method == "POST":
                unknown = set(body) - set(DEFAULT_CONFIG)
                if unknown:
                    return 400, {"code": "validation_error", "message": f"unknown settings {sorted(unknown)}"}
                state.config.update({k: int(v) for k, v in body.items()})
            return 200, {"config": state.config}
        if (method, name) == ("GET", "info"):
            return 200, {"store_id": state.store_id, "authorization_model_id": state.model_id,
                         "token_required": bool(state.token)}
        if (method, name) == ("POST", "reset"):
            everything = not body
            if everything or body.get("faults"):
                state.faults.clear()
            if everything or body.get("calls"):
                state.calls.clear()
                state.fired.clear()
                state.requests.clear()
            if everything or body.get("tuples"):
                with state.store.lock:
                    state.store.tuples.clear()
            if everything or body.get("config"):
                state.config = dict(DEFAULT_CONFIG)
            return 200, {}
    if (method, name) == ("GET", "tuples"):
        return 200, {"tuples": state.store.snapshot()}
    if (method, name) == ("POST", "tuples"):
        keys = [clean_key(k) for k in body.get("tuple_keys") or []]
        fresh, seen = [], set()
        with state.store.lock:
            for key in keys:
                if tuple_id(key) not in state.store.tuples and tuple_id(key) not in seen:
                    seen.add(tuple_id(key))
                    fresh.append(key)
        if body.get("validate", True):
            state.engine.validate(fresh)
        with state.store.lock:
            for key in fresh:
                if tuple_id(key) not in state.store.tuples:
                    state.store.insert(key)
        return 200, {"written": len(fresh)}
    return 404, {"code": "undefined_endpoint", "message": "Not Found"}


def take_faults(state, endpoint):
    """Counts the call, then consumes the faults that apply to it: (delay_ms, rule or None)."""
    with state.lock:
        state.calls[endpoint] = state.calls.get(endpoint, 0) + 1
        delay, chosen = 0, None
        for rule in state.faults:
            if rule["count"] <= 0 or (rule["paths"] and endpoint not in rule["paths"]):
                continue
            if rule["delay_ms"] and not rule["status"] and not rule["reset"]:
                delay = max(delay, rule["delay_ms"])
                rule["count"] -= 1
            elif chosen is None:
                chosen = rule
                rule["count"] -= 1
        state.faults[:] = [r for r in state.faults if r["count"] > 0]
        if chosen or delay:
            state.fired[endpoint] = state.fired.get(endpoint, 0) + 1
        return delay, chosen


def admit(state, authorization, store_id):
    """OpenFGA's bearer-token (preshared key) check, then the store id."""
    if state.token:
        if not authorization.startswith("Bearer "):
            raise ApiError(401, "bearer_token_missing", "missing bearer token")
        given = authorization[len("Bearer "):].strip().encode()
        if not secrets.compare_digest(given, state.token.encode()):
            raise ApiError(401, "unauthenticated", "unauthenticated")
    if not STORE_ID_RE.match(store_id):
        raise validation('invalid store_id: value does not match regex pattern "^[ABCDEFGHJKMNPQRSTVWXYZ0-9]{26}$"')
    if store_id != state.store_id:
        raise ApiError(404, "store_id_not_found", "store not found")


# ---------------------------------------------------------------- HTTP


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "openfga-test-server"
    state = None  # set at startup

    def log_message(self, *args):
        if os.environ.get("FGA_TEST_SERVER_LOG"):
            super().log_message(*args)

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw.strip():
            return {}
        body = json.loads(raw)
        if not isinstance(body, dict):
            raise ValueError("body must be a JSON object")
        return body

    def send_json(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_stream(self, lines, fail_after=None):
        """newline-delimited JSON, chunked, the way OpenFGA's HTTP gateway streams."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for i, line in enumerate(lines):
            if fail_after is not None and i >= fail_after:
                line = {"error": {"code": 4000, "message": "Internal Server Error", "details": []}}
            data = json.dumps(line).encode() + b"\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            if fail_after is not None and i >= fail_after:
                break
        self.wfile.write(b"0\r\n\r\n")

    def reset_connection(self):
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()

    def dispatch(self, method):
        path = self.path.split("?", 1)[0].rstrip("/")
        parts = path.strip("/").split("/")
        state = self.state
        try:
            body = self.read_body() if method == "POST" else {}
        except ValueError as e:
            return self.send_json(400, {"code": "validation_error", "message": f"invalid request body: {e}"})
        if parts[0] == "_test" and len(parts) == 2:
            try:
                status, answer = control(state, method, parts[1], body)
            except ApiError as e:
                status, answer = e.status, e.body()
            return self.send_json(status, answer)
        if len(parts) < 3 or parts[0] != "stores":
            return self.send_json(404, {"code": "undefined_endpoint", "message": "Not Found"})
        store_id, endpoint, rest = parts[1], parts[2], parts[3:]
        route = ROUTES.get((method, endpoint))
        if endpoint == "authorization-models" and method == "GET" and len(rest) == 1:
            route, endpoint = (lambda s, b: api_model(s, b, rest[0])), "authorization-model"
        elif rest:
            route = None
        if route is None:
            return self.send_json(404, {"code": "undefined_endpoint", "message": "Not Found"})
        with state.lock:
            state.requests.append({"method": method, "endpoint": endpoint, "body": body})
            del state.requests[:-200]
        delay, fault = take_faults(state, endpoint)
        if delay:
            time.sleep(delay / 1000)
        if fault and fault["reset"]:
            return self.reset_connection()
        if fault and fault["delay_ms"]:
            time.sleep(fault["delay_ms"] / 1000)
        if fault and fault["status"]:
            status = int(fault["status"])
            code = FAULT_CODES.get(status, "internal_error")
            return self.send_json(status, {"code": code, "message": f"injected fault: HTTP {status}"})
        try:
            admit(state, self.headers.get("Authorization") or "", store_id)
            answer = route(state, body)
        except ApiError as e:
            return self.send_json(e.status, e.body())
        except Exception as e:  # an engine crash or a bug here: an honest 500
            return self.send_json(500, {"code": "internal_error", "message": f"test server: {e!r}"})
        if endpoint == "streamed-list-objects":
            after = fault.get("stream_error_after") if fault else None
            return self.send_stream(answer, after)
        return self.send_json(200, answer)


def exit_when(stop_after, watch_stdin, workdir):
    """Every test server stops by itself: after --max-seconds, or when its stdin closes (and on
    SIGTERM), removing its scratch folder."""

    def stop():
        shutil.rmtree(workdir, ignore_errors=True)
        os._exit(0)

    signal.signal(signal.SIGTERM, lambda *_: stop())
    timer = threading.Timer(stop_after, stop)
    timer.daemon = True
    timer.start()
    if watch_stdin:
        def watch():
            while sys.stdin.buffer.read(4096):
                pass
            stop()
        threading.Thread(target=watch, daemon=True).start()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--model", default=os.path.join(here, "keystone.fga"))
    parser.add_argument("--fga", default=os.environ.get("FGA_BIN", "/opt/anchors/fga-venv/bin/fga"))
    parser.add_argument("--store-id", default=None, help="a ULID; generated when absent")
    parser.add_argument("--model-id", default=None, help="a ULID; generated when absent")
    parser.add_argument("--token", default=None, help="require Authorization: Bearer TOKEN")
    parser.add_argument("--token-file", default=None)
    parser.add_argument("--list-objects-max-results", type=int, default=1000)
    parser.add_argument("--max-seconds", type=float, default=900)
    parser.add_argument("--ignore-stdin", action="store_true", help="do not exit when stdin closes")
    args = parser.parse_args()
    if args.token_file:
        with open(args.token_file) as f:
            args.token = f.read().strip()
    args.store_id = args.store_id or new_ulid()
    args.model_id = args.model_id or new_ulid()
    for name in ("store_id", "model_id"):
        if not STORE_ID_RE.match(getattr(args, name)):
            parser.error(f"--{name.replace('_', '-')} must be a ULID (26 characters of Crockford base32)")
    with open(args.model) as f:
        model_text = f.read()
    transformed = subprocess.run([args.fga, "model", "transform", "--file", args.model, "--output-format", "json"],
                                 capture_output=True, text=True, check=True)
    workdir = tempfile.mkdtemp(prefix="fga-test-server-")
    Handler.state = State(args, Engine(args.fga, model_text, workdir), json.loads(transformed.stdout))
    server = http.server.ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    exit_when(args.max_seconds, not args.ignore_stdin, workdir)
    host, port = server.server_address[:2]
    print(f"listening {host}:{port}", flush=True)
    print(f"store_id {args.store_id}", flush=True)
    print(f"authorization_model_id {args.model_id}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
