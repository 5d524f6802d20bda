"""Provisions and re-syncs a realistic directory into idnode's SCIM v2 endpoint, as an IdP would.

Every request goes through scim2-client (sync, over httpx), with the User and Group models built
from the server's own discovery documents: nothing is sent that /Schemas does not advertise.

usage:
  scim_sync.py provision --base-url URL --token TOKEN [--users 1000] [--groups 100] [--seed 7]
  scim_sync.py resync    --base-url URL --token TOKEN [--users 1000] [--groups 100] [--seed 7]
                         [--change 0.10] [--member-remove-style value|filter]
  common options: [--workers 8] [--request-timeout 30] [--no-verify]
  (resync accepts --users/--groups for symmetry but works from what the server lists)

provision  creates N users (externalId = uuid5(seed, n)) then M groups referencing the user ids
           the server returned (each user in 1-3 groups, <= 1000 members per request).
resync     lists what exists (paged, count <= 200, plus `externalId eq` lookups), then changes a
           `--change` share of it deterministically: users replaced (PUT + If-Match) or patched,
           deactivated (PATCH active false), deleted, created; group members added/removed (PATCH).
           A member is removed with path "members" and a value list (Entra style) by default,
           or with path members[value eq "id"] (Okta / RFC 7644 3.5.2.2) with
           --member-remove-style filter. Deleted users are expected to drop out of every group.

Unless --no-verify, the final directory is read back (paged listing, deleted users -> 404) and
compared with the expected state. stdout: ONE JSON object
  {"users": {id: {"userName","externalId","active","displayName","givenName","familyName","email"}},
   "groups": {id: {"displayName","externalId","members": [sorted ids]}},
   "deleted_users": [ids], "counts": {...}, "verified": bool, "elapsed_s": s}
Any unexpected server answer raises: non-zero exit, traceback on stderr, nothing on stdout.
"""
import argparse
import json
import os
import random
import re
import sys
import threading
import time
import uuid
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import Any

sys.dont_write_bytecode = True  # no __pycache__ next to the scripts
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scim_tester import make_client  # noqa: E402  (also drops *_proxy variables)

from scim2_client import SCIMClientException  # noqa: E402
from scim2_models import (  # noqa: E402
    Error, ListResponse, PatchOp, PatchOperation, SCIMException, SearchRequest)

PAGE = 200            # the server's filter.maxResults
MEMBERS_PER_REQUEST = 1000
NAMESPACE = uuid.UUID("6f1c7a52-3b7e-4d0c-9a51-5c2f4f0b9e11")  # externalIds of this kit
USERNAME_RE = re.compile(r"^[a-z]+\.[a-z]+(\d+)@example\.org$")
FIRST = ["Ada", "Alan", "Grace", "Linus", "Margaret", "Dennis", "Barbara", "Ken", "Frances", "Edsger",
         "Radia", "Tim", "Sophie", "John", "Karen", "Donald", "Hedy", "Niklaus", "Adele", "Guido",
         "Shafi", "Leslie", "Anita", "Bjarne", "Jean", "Whitfield", "Martha", "Vint", "Joan", "Robert"]
LAST = ["Lovelace", "Turing", "Hopper", "Torvalds", "Hamilton", "Ritchie", "Liskov", "Thompson", "Allen",
        "Dijkstra", "Perlman", "Lee", "Wilson", "Backus", "Jones", "Knuth", "Lamarr", "Wirth", "Goldberg",
        "Rossum", "Goldwasser", "Lamport", "Borg", "Stroustrup", "Sammet", "Diffie", "Rhodes", "Cerf",
        "Clarke", "Kahn"]
TEAMS = ["Engineering", "Sales", "Finance", "Support", "Legal", "Research", "Marketing", "Operations",
         "Security", "Design"]


class Unexpected(Exception):
    """The server answered something other than what the operation must produce."""


# ----------------------------------------------------------------------------------------------
# Directory model: what a user / group should look like, in the JSON shape printed at the end
# ----------------------------------------------------------------------------------------------

def user_ext(seed: int, n: int) -> str:
    return str(uuid.uuid5(NAMESPACE, f"{seed}:user:{n}"))


def group_ext(seed: int, g: int) -> str:
    return str(uuid.uuid5(NAMESPACE, f"{seed}:group:{g}"))


def person(seed: int, n: int, given: str | None = None, family: str | None = None, active: bool = True) -> dict:
    """The expected record of user #n (userName embeds n, which keeps it unique across renames)."""
    rng = random.Random(f"{seed}:person:{n}")
    given = given or rng.choice(FIRST)
    family = family or rng.choice(LAST)
    user_name = f"{given.lower()}.{family.lower()}{n}@example.org"
    return {"userName": user_name, "externalId": user_ext(seed, n), "active": active,
            "displayName": f"{given} {family}", "givenName": given, "familyName": family, "email": user_name}


def user_payload(rec: dict) -> dict:
    return {"externalId": rec["externalId"], "userName": rec["userName"],
            "name": {"givenName": rec["givenName"], "familyName": rec["familyName"]},
            "displayName": rec["displayName"], "emails": [{"value": rec["email"], "primary": True}],
            "active": rec["active"]}


def user_record(obj: Any) -> dict:
    """A User the server returned, in the expected-state shape."""
    d = obj.model_dump()  # SCIM names, unset attributes left out
    name = d.get("name") or {}
    emails = d.get("emails") or []
    primary = [e for e in emails if e.get("primary")] or emails
    return {"userName": d.get("userName"), "externalId": d.get("externalId"), "active": d.get("active"),
            "displayName": d.get("displayName"), "givenName": name.get("givenName"),
            "familyName": name.get("familyName"), "email": primary[0].get("value") if primary else None}


def group_record(obj: Any) -> dict:
    d = obj.model_dump()
    return {"displayName": d.get("displayName"), "externalId": d.get("externalId"),
            "members": sorted(m["value"] for m in d.get("members") or [])}


def expect_equal(what: str, expected: Any, actual: Any) -> None:
    if expected != actual:
        raise Unexpected(f"{what}: expected {json.dumps(expected, sort_keys=True)}, "
                         f"server has {json.dumps(actual, sort_keys=True)}")


def chunks(seq: list, size: int) -> list:
    return [seq[i:i + size] for i in range(0, len(seq), size)]


# ----------------------------------------------------------------------------------------------
# SCIM session: the client, the discovered models, and every call checked
# ----------------------------------------------------------------------------------------------

class Directory:
    def __init__(self, args: argparse.Namespace):
        self.client = make_client(args.base_url, args.token, args.request_timeout)
        self.client.discover()  # /ResourceTypes, /Schemas, /ServiceProviderConfig
        self.User = self.client.get_resource_model("User")
        self.Group = self.client.get_resource_model("Group")
        if self.User is None or self.Group is None:
            raise Unexpected("the server's /ResourceTypes publish no User or no Group")
        self.workers = args.workers
        self.lock = threading.Lock()
        self.requests = 0

    def _count(self, n: int = 1) -> None:
        with self.lock:
            self.requests += n

    def parallel(self, fn, items: list) -> list:
        """fn over items on a small pool; the first failure cancels the rest and is re-raised."""
        if not items:
            return []
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            futures = [pool.submit(fn, item) for item in items]
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            for f in futures:
                if f.done() and f.exception() is not None:
                    for other in futures:
                        other.cancel()
                    raise f.exception()
            return [f.result() for f in futures]

    # -- users ----------------------------------------------------------------------------------
    def create_user(self, rec: dict) -> str:
        self._count()
        created = self.client.create(self.User.model_validate(user_payload(rec)), expected_status_codes=[201])
        if not created.id or not created.meta or not created.meta.version:
            raise Unexpected(f"created user {rec['userName']} has no id or no meta.version")
        expect_equal(f"POST /Users {rec['userName']}", rec, user_record(created))
        return created.id

    def get_user(self, uid: str) -> Any:
        self._count()
        return self.client.query(self.User, uid, expected_status_codes=[200])

    def replace_user(self, uid: str, rec: dict) -> None:
        """PUT, conditional on the version just read (If-Match is set by scim2-client)."""
        current = self.get_user(uid)
        meta = {"resourceType": "User", "version": current.meta.version}
        replacement = self.User.model_validate({**user_payload(rec), "id": uid, "meta": meta})
        self._count()
        replaced = self.client.replace(replacement, expected_status_codes=[200])
        expect_equal(f"PUT /Users/{uid}", rec, user_record(replaced))

    def patch_user(self, uid: str, rec: dict, operations: list) -> None:
        self._count()
        patched = self.client.modify(self.User, uid, PatchOp[self.User](operations=operations),
                                     expected_status_codes=[200, 204])
        if patched is None:  # 204: read it back
            patched = self.get_user(uid)
        expect_equal(f"PATCH /Users/{uid}", rec, user_record(patched))

    def delete_user(self, uid: str) -> None:
        self._count()
        self.client.delete(self.User, uid, expected_status_codes=[204])

    def expect_gone(self, uid: str) -> None:
        self._count()
        answer = self.client.query(self.User, uid, raise_scim_errors=False, expected_status_codes=None)
        if not isinstance(answer, Error) or answer.status != 404:
            raise Unexpected(f"GET /Users/{uid} after DELETE: expected a 404 Error, got {answer!r}")

    def find_user_by_external_id(self, ext: str) -> Any:
        self._count()
        search = SearchRequest[self.User](filter=f'externalId eq "{ext}"')
        found = self.client.query(self.User, query_parameters=search, expected_status_codes=[200])
        resources = found.resources or []
        if found.total_results != 1 or len(resources) != 1 or resources[0].external_id != ext:
            raise Unexpected(f'filter externalId eq "{ext}": expected exactly that user, got '
                             f"totalResults={found.total_results} {[r.external_id for r in resources]}")
        return resources[0]

    # -- groups ---------------------------------------------------------------------------------
    def create_group(self, spec: dict) -> str:
        members = spec["members"]
        first, rest = members[:MEMBERS_PER_REQUEST], members[MEMBERS_PER_REQUEST:]
        payload = {"displayName": spec["displayName"], "externalId": spec["externalId"],
                   "members": [{"value": m} for m in first]}
        self._count()
        created = self.client.create(self.Group.model_validate(payload), expected_status_codes=[201])
        if not created.id:
            raise Unexpected(f"created group {spec['displayName']} has no id")
        expect_equal(f"POST /Groups {spec['displayName']}", {**spec, "members": sorted(first)},
                     group_record(created))
        for part in chunks(rest, MEMBERS_PER_REQUEST):
            self.patch_members(created.id, add=part, remove=[], style="value")
        return created.id

    def patch_members(self, gid: str, add: list, remove: list, style: str) -> Any:
        """One PATCH: an add of `add`, then the removal of `remove` (<= 1000 members in all)."""
        if len(add) + len(remove) > MEMBERS_PER_REQUEST:
            raise ValueError("a members PATCH is limited to 1000 members: chunk it")
        ops = [PatchOperation(op="add", path="members", value=[{"value": m} for m in add])] if add else []
        if style == "filter":
            ops += [PatchOperation(op="remove", path=f'members[value eq "{m}"]') for m in remove]
        elif remove:
            ops.append(PatchOperation(op="remove", path="members", value=[{"value": m} for m in remove]))
        self._count()
        return self.client.modify(self.Group, gid, PatchOp[self.Group](operations=ops),
                                  expected_status_codes=[200, 204])

    # -- listing --------------------------------------------------------------------------------
    def list_all(self, model: type) -> list:
        """Every resource of a type, page by page (startIndex 1-based, count <= PAGE)."""
        out, start, total = [], 1, None
        while total is None or len(out) < total:
            self._count()
            search = SearchRequest[model](start_index=start, count=PAGE)
            page = self.client.query(model, query_parameters=search, expected_status_codes=[200])
            if not isinstance(page, ListResponse):
                raise Unexpected(f"GET list of {model.__name__}: not a ListResponse: {page!r}")
            resources = page.resources or []
            if total is None:
                total = page.total_results
            elif page.total_results != total:
                raise Unexpected(f"{model.__name__} totalResults moved from {total} to {page.total_results} "
                                 "while paging")
            if page.start_index not in (None, start) or len(resources) > PAGE:
                raise Unexpected(f"{model.__name__} page at startIndex={start}: startIndex={page.start_index}, "
                                 f"{len(resources)} resources for count={PAGE}")
            if page.items_per_page is not None and page.items_per_page != len(resources):
                raise Unexpected(f"{model.__name__} itemsPerPage={page.items_per_page} "
                                 f"but {len(resources)} resources")
            if not resources and len(out) < total:
                raise Unexpected(f"{model.__name__}: empty page at startIndex={start}, "
                                 f"{len(out)}/{total} listed")
            out.extend(resources)
            start += len(resources)
        ids = [r.id for r in out]
        if len(set(ids)) != len(ids):
            raise Unexpected(f"{model.__name__} listing returned an id twice across pages")
        return out

    def snapshot(self) -> tuple[dict, dict]:
        users = {u.id: user_record(u) for u in self.list_all(self.User)}
        groups = {g.id: group_record(g) for g in self.list_all(self.Group)}
        return users, groups


# ----------------------------------------------------------------------------------------------
# provision / resync
# ----------------------------------------------------------------------------------------------

def provision(d: Directory, args: argparse.Namespace) -> dict:
    seed = args.seed
    # Whatever the domain already holds (e.g. users not managed through SCIM) stays as it is.
    existing_users, existing_groups = d.snapshot()
    recs = [person(seed, n) for n in range(args.users)]
    ids = d.parallel(d.create_user, recs)
    users = dict(zip(ids, recs))

    # Each user joins 1-3 groups; groups come after the users and reference the server's ids.
    members: list[list[str]] = [[] for _ in range(args.groups)]
    if args.groups:
        for n, uid in enumerate(ids):
            rng = random.Random(f"{seed}:membership:{n}")
            for g in rng.sample(range(args.groups), k=min(args.groups, rng.randint(1, 3))):
                members[g].append(uid)
    specs = [{"displayName": f"{TEAMS[g % len(TEAMS)]} {g:04d}", "externalId": group_ext(seed, g),
              "members": sorted(members[g])} for g in range(args.groups)]
    gids = d.parallel(d.create_group, specs)
    groups = dict(zip(gids, specs))
    counts = {"users": len(users) + len(existing_users), "groups": len(groups) + len(existing_groups),
              "memberships": sum(len(g["members"]) for g in [*specs, *existing_groups.values()]),
              "created_users": len(users), "created_groups": len(groups),
              "preexisting_users": len(existing_users), "preexisting_groups": len(existing_groups)}
    return {"users": {**existing_users, **users}, "groups": {**existing_groups, **groups},
            "deleted_users": [], "counts": counts}


def resync(d: Directory, args: argparse.Namespace) -> dict:
    seed = args.seed
    users, groups = d.snapshot()
    with_ext = [rec["externalId"] for rec in users.values() if rec["externalId"] is not None]
    if len(set(with_ext)) != len(with_ext):
        raise Unexpected("two listed users share an externalId")

    # The kit's users (userName embeds n) are the ones this sync manages.
    numbered = {}
    for uid, rec in users.items():
        m = USERNAME_RE.match(rec["userName"] or "")
        if m and rec["externalId"] == user_ext(seed, int(m.group(1))):
            numbered[uid] = int(m.group(1))
    managed = sorted(numbered, key=lambda uid: numbered[uid])
    if not managed:
        raise Unexpected("no user provisioned by this kit (same --seed) exists: run provision first")

    rng = random.Random(f"{seed}:resync:{len(users)}:{len(groups)}")
    k = max(1, round(args.change * len(managed)))
    picked = rng.sample(managed, min(k, len(managed)))
    cut = [round(len(picked) * f) for f in (0.30, 0.50, 0.75)]
    to_put, to_patch, to_deactivate, to_delete = (picked[:cut[0]], picked[cut[0]:cut[1]],
                                                  picked[cut[1]:cut[2]], picked[cut[2]:])
    n_new = max(1, round(k * 0.25))
    next_n = max(numbered.values()) + 1

    # The directory is looked up by externalId, as an IdP matches its records.
    d.parallel(lambda uid: expect_equal(f"externalId lookup of {uid}", uid,
                                        d.find_user_by_external_id(users[uid]["externalId"]).id), picked)

    expected = {uid: dict(rec) for uid, rec in users.items()}

    def renamed(uid: str) -> dict:
        rec, n = expected[uid], numbered[uid]
        family = random.Random(f"{seed}:rename:{n}:{rec['familyName']}").choice(
            [x for x in LAST if x != rec["familyName"]])
        new = person(seed, n, given=rec["givenName"], family=family, active=rec["active"])
        return new

    plan_put = {uid: renamed(uid) for uid in to_put}
    plan_patch = {}
    for uid in to_patch:
        new = renamed(uid)
        new["email"] = expected[uid]["email"]  # a PATCH of names leaves the email alone
        plan_patch[uid] = new
    plan_deact = {uid: {**expected[uid], "active": False} for uid in to_deactivate}
    new_recs = [person(seed, n) for n in range(next_n, next_n + n_new)]

    def do_user(item: tuple) -> str | None:
        kind, uid = item  # for "create", the record of the new user instead of an id
        if kind == "put":
            d.replace_user(uid, plan_put[uid])
        elif kind == "patch":
            rec = plan_patch[uid]
            d.patch_user(uid, rec, [
                PatchOperation(op="replace", path="userName", value=rec["userName"]),
                PatchOperation(op="replace", path="name.familyName", value=rec["familyName"]),
                PatchOperation(op="replace", path="displayName", value=rec["displayName"]),
            ])
        elif kind == "deactivate":
            d.patch_user(uid, plan_deact[uid], [PatchOperation(op="replace", path="active", value=False)])
        elif kind == "delete":
            d.delete_user(uid)
        else:
            return d.create_user(uid)
        return None

    work = ([("put", u) for u in to_put] + [("patch", u) for u in to_patch] +
            [("deactivate", u) for u in to_deactivate] + [("delete", u) for u in to_delete] +
            [("create", r) for r in new_recs])
    results = d.parallel(do_user, work)
    new_ids = [r for r in results if r is not None]

    for uid, rec in {**plan_put, **plan_patch, **plan_deact}.items():
        expected[uid] = rec
    for uid in to_delete:
        del expected[uid]
    expected.update(zip(new_ids, new_recs))

    # Group memberships: deleted users leave every group; then a share of the groups gets
    # some members added (survivors and new hires) and some removed, in one PATCH each.
    # Choices are drawn from lists in a server-independent order (user number, externalId), so
    # the same seed changes the same people and teams on any server, whatever ids it assigns.
    numbered.update({uid: next_n + i for i, uid in enumerate(new_ids)})

    def user_order(uid: str) -> tuple:
        return (0, numbered[uid], "") if uid in numbered else (1, 0, users[uid]["externalId"] or uid)

    gexpected = {gid: {**g, "members": sorted(set(g["members"]) - set(to_delete))} for gid, g in groups.items()}
    present = sorted(set(managed) - set(to_delete), key=user_order) + new_ids  # may join a group
    by_team = sorted(groups, key=lambda g: (groups[g]["externalId"] or "", groups[g]["displayName"] or ""))
    changed = rng.sample(by_team, min(len(groups), max(1, round(args.change * len(groups))))) if groups else []
    gplan = {}
    for i, gid in enumerate(changed):
        current = set(gexpected[gid]["members"])
        outsiders = [u for u in present if u not in current]
        add = set(rng.sample(outsiders, min(len(outsiders), rng.randint(1, 5))))
        if new_ids:
            add.add(new_ids[i % len(new_ids)])  # new hires join a team
        remove = rng.sample(sorted(current, key=user_order), min(len(current), rng.randint(1, 5)))
        gplan[gid] = (sorted(add), sorted(remove))

    def do_group(gid: str) -> None:
        add, remove = gplan[gid]
        want = sorted((set(gexpected[gid]["members"]) | set(add)) - set(remove))
        answer = d.patch_members(gid, add, remove, args.member_remove_style)
        if answer is None:
            d._count()
            answer = d.client.query(d.Group, gid, expected_status_codes=[200])
        expect_equal(f"PATCH /Groups/{gid} members", want, group_record(answer)["members"])
        gexpected[gid]["members"] = want

    d.parallel(do_group, changed)

    counts = {"users": len(expected), "groups": len(gexpected),
              "memberships": sum(len(g["members"]) for g in gexpected.values()),
              "replaced_put": len(to_put), "updated_patch": len(to_patch), "deactivated": len(to_deactivate),
              "deleted": len(to_delete), "created_users": len(new_ids), "groups_changed": len(changed),
              "members_added": sum(len(a) for a, _ in gplan.values()),
              "members_removed": sum(len(r) for _, r in gplan.values())}
    return {"users": expected, "groups": gexpected, "deleted_users": sorted(to_delete), "counts": counts}


def verify(d: Directory, state: dict) -> None:
    """Read the whole directory back and compare it with the expected state."""
    users, groups = d.snapshot()
    for label, want, got in (("users", state["users"], users), ("groups", state["groups"], groups)):
        missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
        if missing or extra:
            raise Unexpected(f"{label}: {len(missing)} expected but not listed {missing[:5]}, "
                             f"{len(extra)} listed but not expected {extra[:5]}")
        for rid in sorted(want):
            expect_equal(f"{label} {rid}", want[rid], got[rid])
    d.parallel(d.expect_gone, state["deleted_users"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["provision", "resync"])
    ap.add_argument("--base-url", required=True, help="e.g. http://127.0.0.1:PORT/SCIM/v2/DOMAIN_ID")
    ap.add_argument("--token", required=True, help="SCIM API key (kscim_...)")
    ap.add_argument("--users", type=int, default=1000)
    ap.add_argument("--groups", type=int, default=100)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--change", type=float, default=0.10, help="resync: share of the directory changed")
    ap.add_argument("--member-remove-style", choices=["value", "filter"], default="value")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--request-timeout", type=float, default=30.0)
    ap.add_argument("--no-verify", action="store_true", help="skip the final read-back")
    args = ap.parse_args()
    if not 0 < args.change <= 1:
        ap.error("--change must be in (0, 1]")

    started = time.monotonic()
    d = Directory(args)
    try:
        state = provision(d, args) if args.mode == "provision" else resync(d, args)
        if not args.no_verify:
            verify(d, state)
    except (SCIMClientException, SCIMException) as exc:
        # The exception text rarely says what the server answered: show the response too.
        source = getattr(exc, "source", None)
        if source is not None and hasattr(source, "status_code"):
            print(f"server answered {source.request.method} {source.request.url} -> {source.status_code}: "
                  f"{source.text[:4000]}", file=sys.stderr)
        raise
    state["verified"] = not args.no_verify
    state["counts"]["requests"] = d.requests
    state["elapsed_s"] = round(time.monotonic() - started, 3)
    print(json.dumps(state, sort_keys=True))


if __name__ == "__main__":
    main()
