"""Drives the OpenStack dashboard (Horizon) in headless Chromium against idnode, for
tests/it/horizon.rs: sign in, the project list, a project switch, the Identity panels (create and
delete a project, a user and a group; add and remove a project member's role) and sign-out.

It runs in /opt/anchors/horizon-venv with the environment the Horizon server has
(DJANGO_SETTINGS_MODULE, PYTHONPATH, IDNODE_HORIZON_*), so it can read the session Horizon keeps
for the browser (the tokens Horizon holds) from Horizon's own session store. Selenium drives
Debian's /usr/bin/chromedriver, never Selenium Manager (no network), as
tests/it/oauth2/oidc_client.py does.

Protocol: after each step it prints ONE JSON line {"step": NAME, ...} on stdout and waits for a
line "go" on stdin before the next step (the test checks each step through idnode's API in
between). Anything else on stdin, or its end, stops it. A failure prints {"error": ..., "step":
...}, leaves a screenshot fail-STEP.png, and exits 1. Every step leaves NN-STEP.png in
--artefacts.
"""
import argparse
import json
import os
import signal
import sys
import time
import traceback

for _k in [k for k in os.environ if k.lower().endswith("_proxy")]:
    del os.environ[_k]
os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must never reach for the network

CHROMEDRIVER = os.environ.get("IDNODE_CHROMEDRIVER", "/usr/bin/chromedriver")
CHROMIUM = os.environ.get("IDNODE_CHROMIUM", "/usr/bin/chromium")
WAIT = 60  # seconds any one page or element may take (a debug build behind Horizon, a busy CI)


class Fail(Exception):
    pass


class Session:
    def __init__(self, args):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        self.args = args
        self.shots = 0
        self.step = "start"
        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--no-proxy-server", "--window-size=1280,1000"):
            opts.add_argument(a)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
        self.driver.set_page_load_timeout(WAIT * 2)

    # -- plumbing ---------------------------------------------------------------------------

    def url(self, path):
        return self.args.horizon.rstrip("/") + path

    def find(self, css, root=None):
        from selenium.webdriver.common.by import By
        return (root or self.driver).find_elements(By.CSS_SELECTOR, css)

    def one(self, css, root=None, visible=True):
        """The first element matching `css` (visible unless told), waited for."""
        from selenium.common.exceptions import TimeoutException
        from selenium.webdriver.support.ui import WebDriverWait

        def found(_):
            for e in self.find(css, root):
                try:
                    if not visible or e.is_displayed():
                        return e
                except Exception:  # stale while the page changes
                    pass
            return False
        try:
            return WebDriverWait(self.driver, WAIT).until(found)
        except TimeoutException:
            raise Fail(f"no {'visible ' if visible else ''}{css!r} on {self.driver.current_url}: "
                       f"{self.body_text()[:1200]}") from None

    def body_text(self):
        try:
            return self.driver.find_element("tag name", "body").text
        except Exception:
            return self.driver.page_source[:2000]

    def loaded(self):
        from selenium.webdriver.support.ui import WebDriverWait
        WebDriverWait(self.driver, WAIT).until(
            lambda d: d.execute_script("return document.readyState") == "complete")

    def navigates(self, action):
        """Runs `action` (a click) and waits until the browser has loaded a new document."""
        from selenium.common.exceptions import TimeoutException, WebDriverException
        from selenium.webdriver.support import expected_conditions as EC
        from selenium.webdriver.support.ui import WebDriverWait
        old = self.driver.find_element("tag name", "html")

        def gone(d):
            try:
                return EC.staleness_of(old)(d)
            except WebDriverException as e:
                if "does not belong to the document" in str(e):
                    return True
                raise
        action()
        try:
            WebDriverWait(self.driver, WAIT).until(gone)
        except TimeoutException:
            raise Fail(f"no new page after the action on {self.driver.current_url}: "
                       f"{self.body_text()[:1200]}") from None
        self.loaded()

    def get(self, path):
        self.driver.get(self.url(path))
        self.loaded()

    def shot(self, name):
        self.shots += 1
        path = os.path.join(self.args.artefacts, f"{self.shots:02d}-{name}.png")
        self.driver.save_screenshot(path)
        return path

    def alerts(self):
        """(successes, errors): the texts of Horizon's message boxes on the page. Their text
        content, not their visible text: Horizon fades success messages out after 3 s."""
        def texts(css):
            out = []
            for e in self.find(css):
                t = " ".join((e.get_attribute("textContent") or "").split())
                if t:
                    out.append(t)
            return out
        return texts(".alert-success"), texts(".alert-danger, .alert-error")

    def expect_success(self, what):
        """The page shows a success message and no error message."""
        from selenium.common.exceptions import TimeoutException
        from selenium.webdriver.support.ui import WebDriverWait
        try:
            WebDriverWait(self.driver, WAIT).until(lambda _: any(self.alerts()))
        except TimeoutException:
            raise Fail(f"{what}: no message on {self.driver.current_url}: {self.body_text()[:1500]}") from None
        ok, bad = self.alerts()
        if bad or not ok:
            raise Fail(f"{what}: Horizon says {bad or ok} on {self.driver.current_url}")
        return ok

    def emit(self, step, **fields):
        """Reports a finished step and waits for the test's "go"."""
        fields["step"] = step
        fields["screenshot"] = self.shot(step)
        print(json.dumps(fields), flush=True)
        line = sys.stdin.readline()
        if line.strip() != "go":
            raise SystemExit(f"the test said {line.strip()!r} after step {step}: stopping")

    def session_tokens(self):
        """What Horizon keeps for this browser: its session (found by the browser's session
        cookie) holds the scoped token and the unscoped one it was rescoped from."""
        from django.conf import settings
        from importlib import import_module
        cookie = self.driver.get_cookie(settings.SESSION_COOKIE_NAME)
        if not cookie:
            raise Fail("the browser holds no Horizon session cookie")
        store = import_module(settings.SESSION_ENGINE).SessionStore(cookie["value"])
        data = store.load()
        token = data.get("token")
        if token is None:
            raise Fail(f"Horizon's session {cookie['value'][:6]}… holds no token: {sorted(data)}")
        return {"session_key": cookie["value"], "token": token.id, "unscoped_token": token.unscoped_token,
                "project_id": token.project.get("id") if token.project else None,
                "user_id": token.user.get("id") if token.user else None}

    # -- table helpers ------------------------------------------------------------------------

    def row(self, table, name):
        rows = self.find(f"table#{table} tbody tr[data-display='{name}']")
        return rows[0] if rows else None

    def wait_row(self, table, name, present):
        from selenium.common.exceptions import TimeoutException
        from selenium.webdriver.support.ui import WebDriverWait
        try:
            WebDriverWait(self.driver, WAIT).until(lambda _: (self.row(table, name) is not None) == present)
        except TimeoutException:
            raise Fail(f"row {name!r} {'missing from' if present else 'still in'} table {table}: "
                       f"{self.body_text()[:1500]}") from None

    def open_modal(self, button_css):
        """Clicks a link that opens one of Horizon's modal forms; returns the modal."""
        self.one(button_css).click()
        return self.one(".modal.in form, .modal.show form, .modal form")

    def submit_modal(self, modal, what):
        """Submits a modal form; Horizon answers a success by loading the next page."""
        button = self.one(".modal-footer [type=submit], .modal-footer .btn-primary", modal)
        self.navigates(button.click)
        return self.expect_success(what)

    def delete_rows(self, table, name, what):
        """Selects the row named `name` and runs the table's delete action, confirmed."""
        row = self.row(table, name)
        if row is None:
            raise Fail(f"no row {name!r} in table {table} to delete")
        # Horizon's themed checkbox: the input is hidden, its label is what a person clicks.
        box = self.one("input.table-row-multi-select", row, visible=False)
        if not box.is_selected():
            self.one(".themable-checkbox label", row).click()
        if not box.is_selected():
            raise Fail(f"clicking the checkbox of row {name!r} did not select it")
        self.one(f"#{table}__action_delete").click()
        confirm = self.one(".modal .modal-footer .btn-danger, .modal .modal-footer .btn-primary")
        self.navigates(confirm.click)
        ok = self.expect_success(what)
        self.wait_row(table, name, False)
        return ok

    def fill(self, css, value, root=None):
        e = self.one(css, root)
        e.clear()
        e.send_keys(value)


# ------------------------------------------------------------------------------------------------
# The session
# ------------------------------------------------------------------------------------------------

def run(s, a):
    # 1. Sign in with a password.
    s.step = "login"
    s.get("/auth/login/")
    s.shot("login-page")
    if s.find("#id_domain"):
        raise Fail("the login page asks for a domain: multidomain support is off in these settings")
    s.fill("#id_username", a.username)
    s.fill("#id_password", a.password)
    s.navigates(s.one("#loginBtn").click)
    if "/auth/login" in s.driver.current_url:
        raise Fail(f"still on the login page: {s.body_text()[:1500]}")
    held = s.session_tokens()
    s.emit("login", url=s.driver.current_url, **held)

    # 2. The project list in the header names both projects.
    s.step = "projects"
    open_project_menu(s)
    links = s.find("ul.context-selection a[href*='/auth/switch/']")
    listed = [{"name": e.text.strip(), "href": e.get_attribute("href"),
               "selected": "dropdown-selected" in (e.get_attribute("class") or "")} for e in links]
    s.emit("projects", listed=listed, current=held["project_id"])

    # 3. Switch to the other of the two projects (Horizon rescopes its unscoped token).
    s.step = "switch"
    others = [p["name"] for p in listed if p["name"] in a.projects.split(",") and not p["selected"]]
    if len(others) != 1:
        raise Fail(f"not exactly one other project of {a.projects} to switch to in {listed}")
    link = [e for e in s.find("ul.context-selection a[href*='/auth/switch/']") if e.text.strip() == others[0]]
    if not link or not link[0].is_displayed():
        open_project_menu(s)
        link = [e for e in s.find("ul.context-selection a[href*='/auth/switch/']") if e.text.strip() == others[0]]
    s.navigates(link[0].click)
    ok = s.expect_success("switching project")
    switched = s.session_tokens()
    s.emit("switch", messages=ok, **switched)

    # 4. Identity → Projects: create.
    s.step = "project_create"
    s.get("/identity/")
    modal = s.open_modal("#tenants__action_create")
    s.fill("input#id_name", a.new_project, modal)
    ok = s.submit_modal(modal, "creating a project")
    s.wait_row("tenants", a.new_project, True)
    s.emit("project_create", name=a.new_project, messages=ok)

    # 5. Identity → Users: create.
    s.step = "user_create"
    s.get("/identity/users/")
    modal = s.open_modal("#users__action_create")
    s.fill("input#id_name", a.new_user, modal)
    s.fill("input#id_password", a.new_user_password, modal)
    s.fill("input#id_confirm_password", a.new_user_password, modal)
    ok = s.submit_modal(modal, "creating a user")
    s.wait_row("users", a.new_user, True)
    s.emit("user_create", name=a.new_user, messages=ok)

    # 6. Identity → Groups: create.
    s.step = "group_create"
    s.get("/identity/groups/")
    modal = s.open_modal("#groups__action_create")
    s.fill("input#id_name", a.new_group, modal)
    ok = s.submit_modal(modal, "creating a group")
    s.wait_row("groups", a.new_group, True)
    s.emit("group_create", name=a.new_group, messages=ok)

    # 7. Identity → Projects → Manage Members: the new user joins the new project with the
    #    default role, then leaves it.
    s.step = "member_add"
    manage_members(s, a, add=True)
    s.emit("member_add", project=a.new_project, user=a.new_user)
    s.step = "member_remove"
    manage_members(s, a, add=False)
    s.emit("member_remove", project=a.new_project, user=a.new_user)

    # 8. Delete what was created.
    s.step = "group_delete"
    s.get("/identity/groups/")
    ok = s.delete_rows("groups", a.new_group, "deleting a group")
    s.emit("group_delete", name=a.new_group, messages=ok)
    s.step = "user_delete"
    s.get("/identity/users/")
    ok = s.delete_rows("users", a.new_user, "deleting a user")
    s.emit("user_delete", name=a.new_user, messages=ok)
    s.step = "project_delete"
    s.get("/identity/")
    ok = s.delete_rows("tenants", a.new_project, "deleting a project")
    s.emit("project_delete", name=a.new_project, messages=ok)

    # 9. Sign out: the user menu's form posts to Horizon's logout view.
    s.step = "logout"
    before = s.session_tokens()
    s.one("li.user-menu > a.dropdown-toggle").click()
    s.navigates(s.one("li.user-menu form button[type=submit]").click)
    s.loaded()
    if "/auth/login" not in s.driver.current_url:
        raise Fail(f"sign-out did not end on the login page: {s.driver.current_url}")
    from django.conf import settings
    from importlib import import_module
    store = import_module(settings.SESSION_ENGINE).SessionStore(before["session_key"])
    session_left = store.exists(before["session_key"])
    # The old session cookie, replayed, no longer opens the dashboard.
    s.driver.delete_all_cookies()
    s.driver.add_cookie({"name": settings.SESSION_COOKIE_NAME, "value": before["session_key"], "path": "/"})
    s.get("/identity/")
    replay_lands_on = s.driver.current_url
    s.emit("logout", url=s.driver.current_url, session_left=session_left, replay_lands_on=replay_lands_on,
           held=before)


def open_project_menu(s):
    """Opens the header's project menu (the dropdown holding the context selection)."""
    s.one("ul.context-selection", visible=False)
    toggle = s.driver.find_element(
        "xpath", "//ul[contains(@class, 'context-selection')]/preceding-sibling::a[contains(@class, 'dropdown-toggle')]")
    toggle.click()
    s.one("ul.context-selection a[href*='/auth/switch/']")


def manage_members(s, a, add):
    s.get("/identity/")
    row = s.row("tenants", a.new_project)
    if row is None:
        raise Fail(f"no row for project {a.new_project!r}")
    project_id = row.get_attribute("data-object-id")
    # "Manage Members" is the row's first (primary) action.
    modal = s.open_modal(f"#tenants__row_{project_id}__action_users")
    slug = "update_members"
    tab = s.find(f".modal a[data-target='#update_project__{slug}'], .modal a[href='#update_project__{slug}']")
    if tab and tab[0].is_displayed():
        tab[0].click()
    side = "available_" + slug if add else slug + "_members"
    members = s.find(f"ul.{side} li.member")
    mine = [m for m in members if m.text.strip() == a.new_user]
    if not mine:
        s.one(f"ul.{side} li.member")  # wait for the widget
        mine = [m for m in s.find(f"ul.{side} li.member") if m.text.strip() == a.new_user]
    if not mine:
        raise Fail(f"{a.new_user!r} is not among the {'available users' if add else 'members'}: "
                   f"{[m.text for m in s.find(f'ul.{side} li.member')]}")
    button = mine[0].find_element("xpath", "./following-sibling::li/a[@href='#add_remove']")
    button.click()
    other = slug + "_members" if add else "available_" + slug
    from selenium.webdriver.support.ui import WebDriverWait
    WebDriverWait(s.driver, WAIT).until(
        lambda _: any(m.text.strip() == a.new_user for m in s.find(f"ul.{other} li.member")))
    s.shot("member-add-picked" if add else "member-remove-picked")
    s.submit_modal(modal, "adding a member" if add else "removing a member")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--horizon", required=True)
    p.add_argument("--username", required=True)
    p.add_argument("--password", required=True)
    p.add_argument("--projects", required=True, help="the user's two projects: NAME,NAME")
    p.add_argument("--new-project", required=True)
    p.add_argument("--new-user", required=True)
    p.add_argument("--new-user-password", required=True)
    p.add_argument("--new-group", required=True)
    p.add_argument("--artefacts", required=True)
    a = p.parse_args()
    # The test stops a driver it gave up on with SIGTERM: leave through `finally`, which closes
    # the browser.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.makedirs(a.artefacts, exist_ok=True)
    import django
    django.setup()
    s = None
    try:
        s = Session(a)
        run(s, a)
        print(json.dumps({"step": "done"}), flush=True)
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001 - reported to the test, then exit 1
        traceback.print_exc()
        out = {"error": f"{type(e).__name__}: {e}", "step": s.step if s else "browser"}
        if s is not None:
            try:
                out["screenshot"] = os.path.join(a.artefacts, f"fail-{s.step}.png")
                s.driver.save_screenshot(out["screenshot"])
                out["url"] = s.driver.current_url
                out["console"] = [m["message"] for m in s.driver.get_log("browser")][-20:]
            except Exception:  # noqa: BLE001
                pass
        print(json.dumps(out), flush=True)
        sys.exit(1)
    finally:
        if s is not None:
            s.driver.quit()


if __name__ == "__main__":
    main()
