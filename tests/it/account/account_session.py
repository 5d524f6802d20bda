"""Browser driver for the account page test (tests/it/account_page.rs): one headless Chromium,
driven through selenium and Debian's /usr/bin/chromedriver (offline: never Selenium Manager),
with a DevTools virtual authenticator (CTAP2, internal transport, resident key, user
verification) so that the page's passkey buttons work.

The driver keeps the browser open across steps. It reads one JSON command per line on stdin and
answers each with one JSON line on stdout: {"ok": true, ...} or {"ok": false, "error": ...}.
End of input (or the `quit` command) quits the browser; so does any exit of this script.

usage: account_session.py --artefacts DIR
commands (field `op`):
  open {url}                       load a page (waits until it is complete)
  fill {fields: {css: value}}      type into inputs (cleared first); a <select> takes the value
  click {css, nav}                 click; with nav (default true) wait until the page changed
  texts {css}                      the texts of the elements matching css (an empty list: none)
  attr {css, name}                 an attribute of the first match (null: no element)
  url                              the current URL
  shot {name}                      save DIR/<name>.png
  console                          every browser console entry seen so far
  authenticator                    the virtual authenticator's credentials (count, sign counts)
  quit
"""
import argparse
import json
import os
import sys
import traceback

for _k in [k for k in os.environ if k.lower().endswith("_proxy")]:
    del os.environ[_k]
os.environ["SE_OFFLINE"] = "true"

from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import TimeoutException, WebDriverException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

CHROMEDRIVER = os.environ.get("IDNODE_CHROMEDRIVER", "/usr/bin/chromedriver")
CHROMIUM = os.environ.get("IDNODE_CHROMIUM", "/usr/bin/chromium")
# Every wait of the browser is bounded by this (a busy CI host may be slow; no upper bound
# on how fast anything must be, only on how long we wait before declaring it stuck).
WAIT = 60


class Fail(Exception):
    pass


class Session:
    def __init__(self, artefacts):
        self.artefacts = artefacts
        os.makedirs(artefacts, exist_ok=True)
        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--no-proxy-server", "--window-size=1024,900"):
            opts.add_argument(a)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
        self.driver.set_page_load_timeout(WAIT)
        self.driver.set_script_timeout(WAIT)
        self.console = []
        self.driver.execute_cdp_cmd("WebAuthn.enable", {"enableUI": False})
        self.authenticator = self.driver.execute_cdp_cmd("WebAuthn.addVirtualAuthenticator", {"options": {
            "protocol": "ctap2", "transport": "internal", "hasResidentKey": True,
            "hasUserVerification": True, "isUserVerified": True,
            "automaticPresenceSimulation": True}})["authenticatorId"]

    def quit(self):
        try:
            self.driver.quit()
        except Exception:  # noqa: BLE001 - quitting is best effort
            pass

    def drain_console(self):
        try:
            for e in self.driver.get_log("browser"):
                self.console.append({"level": e.get("level"), "message": e.get("message"),
                                     "url": self.driver.current_url})
        except WebDriverException:
            pass

    def loaded(self):
        WebDriverWait(self.driver, WAIT).until(
            lambda d: d.execute_script("return document.readyState") == "complete")

    def find(self, css):
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def one(self, css):
        found = self.find(css)
        if not found:
            raise Fail(f"no element {css!r} at {self.driver.current_url}: {self.body()}")
        return found[0]

    def body(self):
        try:
            return self.driver.find_element(By.TAG_NAME, "body").text[:1500]
        except WebDriverException:
            return "(no body)"

    # -- commands ---------------------------------------------------------------------------

    def op_open(self, c):
        self.driver.get(c["url"])
        self.loaded()
        return {"url": self.driver.current_url}

    def op_fill(self, c):
        for css, value in c["fields"].items():
            el = self.one(css)
            if el.tag_name.lower() == "select":
                Select(el).select_by_value(value)
            else:
                el.clear()
                el.send_keys(value)
        return {}

    def op_click(self, c):
        el = self.one(c["css"])
        if not el.is_displayed():
            raise Fail(f"{c['css']!r} is not displayed at {self.driver.current_url}: {self.body()}")
        if not c.get("nav", True):
            el.click()
            return {}
        old = self.driver.find_element(By.TAG_NAME, "html")
        el.click()

        def gone(d):
            try:
                return EC.staleness_of(old)(d)
            except WebDriverException as e:
                if "does not belong to the document" in str(e):
                    return True
                raise
        try:
            WebDriverWait(self.driver, WAIT).until(gone)
        except TimeoutException:
            self.drain_console()
            notes = [n.text for n in self.find("#passkey-note, #error")]
            raise Fail(f"clicking {c['css']!r} did not leave {self.driver.current_url} within {WAIT} s; "
                       f"notes: {notes}; console: {self.console[-5:]}; page: {self.body()}") from None
        self.loaded()
        return {"url": self.driver.current_url}

    def op_texts(self, c):
        return {"texts": [e.text for e in self.find(c["css"])]}

    def op_attr(self, c):
        found = self.find(c["css"])
        return {"value": found[0].get_attribute(c["name"]) if found else None}

    def op_url(self, c):
        return {"url": self.driver.current_url}

    def op_shot(self, c):
        path = os.path.join(self.artefacts, c["name"] + ".png")
        if not self.driver.save_screenshot(path):
            raise Fail(f"no screenshot at {path}")
        return {"path": path}

    def op_console(self, c):
        return {"entries": self.console}

    def op_authenticator(self, c):
        held = self.driver.execute_cdp_cmd("WebAuthn.getCredentials", {"authenticatorId": self.authenticator})
        creds = held["credentials"]
        return {"count": len(creds), "sign_counts": [x["signCount"] for x in creds],
                "resident": [x.get("isResidentCredential") for x in creds]}


def reply(obj):
    sys.stdout.write(json.dumps(obj, default=str) + "\n")
    sys.stdout.flush()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--artefacts", required=True)
    args = p.parse_args()
    try:
        s = Session(args.artefacts)
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        reply({"ok": False, "error": f"starting the browser: {type(e).__name__}: {e}"})
        sys.exit(1)
    reply({"ok": True, "started": True})
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            c = json.loads(line)
            if c["op"] == "quit":
                reply({"ok": True})
                break
            try:
                out = getattr(s, "op_" + c["op"])(c)
                s.drain_console()
                reply({"ok": True, **out})
            except Exception as e:  # noqa: BLE001 - every failure is an answer
                traceback.print_exc()
                s.drain_console()
                reply({"ok": False, "error": f"{type(e).__name__}: {e}", "url": s.driver.current_url})
    finally:
        s.quit()


if __name__ == "__main__":
    main()
