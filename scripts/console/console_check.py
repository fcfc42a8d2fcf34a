#!/usr/bin/env python3
"""Drives hearthd's web console in headless Chromium (Selenium) against a running server.

Usage: console_check.py HTTP_PORT TCP_PORT ADMIN_SECRET SCREENSHOT_DIR

The server must hold the data ConsoleTests seeds (/greeting, /dinosaurs, /big with 100,000
children) and rules that let signed-in users read and write. Checks, in a real browser:
the tree shows the seeded data; a write over the TCP line protocol shows in the page within one
second; an edit made in the page is read back over TCP; a query's result order (and that it stays
live); a rules edit with an error shows the error at its line and keeps the old rules; the
simulator; a location with 100,000 children opens in under a second; importing a JSON file of
2,000 children (in parts, with progress) and reading it back over TCP; exporting it (a download,
with progress) equal to a REST GET; deleting it asks first (dismissed: kept; accepted: deleted);
moving in the tree and editing a value with the keyboard alone; the sign-in placeholder, the
icon and the Swift snippet's line-protocol port; the database picker: a bad name shows the
server's message, a database created through it holds what the page writes there (read over TCP
with `use`) and nothing of it shows in the default database, and its tree, stream, query and
rules all address it (`ns`), also after a reload and after switching back and forth, and signed
out; the picker's Info panel shows the chosen database's information (its rev after a write,
on Refresh; its folder, size and quotas); deleting it needs its name typed (a wrong one deletes
nothing), moves it to the trash under the data directory (the console shows where, the folder
exists) or purges it, drops it from the picker and moves the console to the default database;
the triggers panel lists the database's triggers, follows one added and removed meanwhile, and
shows a trigger's dead letters, never its secret.
Saves one screenshot per panel (data.png, query.png, rules.png, server.png) and two of the
picker (database.png, database-info.png) in SCREENSHOT_DIR. Prints "ok" last.
"""
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import time
import urllib.request

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

from browser import check, start_chromium, wait_until


class LineClient:
    """The TCP line protocol: one JSON request per line, answers matched by id."""

    def __init__(self, port, token, db=None):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buffer = b""
        self.next_id = 0
        self.read_line()  # hello
        if db is not None:
            answer = self.request({"op": "use", "db": db})  # only as the connection's first request
            assert answer.get("ok"), answer
        answer = self.request({"op": "auth", "token": token})
        assert answer.get("ok"), answer

    def read_line(self):
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError("the server closed the TCP connection")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def request(self, body):
        self.next_id += 1
        body = dict(body, id=self.next_id)
        self.sock.sendall((json.dumps(body) + "\n").encode())
        while True:
            message = self.read_line()
            if message.get("id") == self.next_id:
                return message

    def get(self, path):
        answer = self.request({"op": "get", "path": path})
        assert answer.get("ok"), answer
        return answer.get("value")

    def set(self, path, value):
        answer = self.request({"op": "set", "path": path, "value": value})
        assert answer.get("ok"), answer


def main():
    http_port, tcp_port, admin, shots = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    os.makedirs(shots, exist_ok=True)
    base = "http://127.0.0.1:%d" % http_port
    tcp = LineClient(tcp_port, admin)

    def http_json(path):
        with urllib.request.urlopen(base + path + ("&" if "?" in path else "?") + "auth=" + admin) as answer:
            return json.loads(answer.read())

    def plain(value):
        """A value in export format (.value, .priority) as plain JSON."""
        if not isinstance(value, dict):
            return value
        if ".value" in value:
            return value[".value"]
        return {key: plain(child) for key, child in value.items() if key != ".priority"}

    scratch = tempfile.mkdtemp(prefix="hearth-console-")
    downloads = os.path.join(scratch, "downloads")
    os.makedirs(downloads)

    driver = start_chromium(["--force-device-scale-factor=1"], prefs={
        "download.default_directory": downloads, "download.prompt_for_download": False,
        "download.directory_upgrade": True, "safebrowsing.enabled": False})
    driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads})
    driver.set_window_size(1280, 800)
    # Screenshots of exactly 1280x800, whatever the headless window's decorations.
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False})

    def wait(condition, timeout=10, what="condition", page=None):
        return wait_until(driver, condition, timeout, what, page)

    def find(selector):
        found = driver.find_elements(By.CSS_SELECTOR, selector)
        return found[0] if found else None

    def node(path):
        return find('#tree [data-path="%s"]' % path)

    def value_of(path):
        element = node(path)
        return element.get_attribute("data-value") if element else None

    def toggle(path):
        find('#tree [data-path="%s"] > .row > .toggle' % path).click()

    def shallow_timing(fragment):
        """How long the last read whose URL holds `fragment` took: waiting, and receiving."""
        entry = driver.execute_script(
            "const found = performance.getEntriesByType('resource').filter((e) => e.name.includes(arguments[0]));"
            "const e = found[found.length - 1];"
            "return e ? [e.responseStart - e.requestStart, e.responseEnd - e.responseStart, e.transferSize] : null;", fragment)
        return "read: server %.0f ms, transfer %.0f ms, %d bytes" % tuple(entry) if entry else "no read"

    def press(*keys):
        """Keys typed at whatever has the focus (the keyboard alone)."""
        ActionChains(driver).send_keys(*keys).perform()

    try:
        # Sign in with the admin secret (kept in sessionStorage).
        driver.get(base + "/")
        field = wait(lambda: find("#auth-input"), what="the sign-in field")
        # The server has rules: the field says sign-in is needed (not "none (open mode)").
        wait(lambda: "rules" in (field.get_attribute("placeholder") or ""),
             what="the sign-in placeholder for a server with rules (got %r)" % field.get_attribute("placeholder"))
        with urllib.request.urlopen(base + "/favicon.ico") as answer:
            check(answer.status == 200 and answer.headers["Content-Type"] == "image/svg+xml", "the favicon")
        field.send_keys(admin, Keys.ENTER)
        wait(lambda: find("#auth-state").text == "signed in", what="signing in")

        # 1. The tree shows the seeded data.
        wait(lambda: value_of("/greeting") == '"hello"', what="/greeting in the tree")
        wait(lambda: node("/dinosaurs") is not None, what="/dinosaurs in the tree")
        toggle("/dinosaurs")
        wait(lambda: node("/dinosaurs/trex") is not None, what="/dinosaurs/trex")
        toggle("/dinosaurs/trex")
        wait(lambda: value_of("/dinosaurs/trex/height") == "6", what="/dinosaurs/trex/height = 6")
        check(find('[data-role="path"]') is not None, "no path bar")
        wait(lambda: "● live" in find("#live-state").text, what="the live stream")

        # 2. A write over TCP appears in the page within one second (and is highlighted).
        started = time.monotonic()
        tcp.set("/dinosaurs/trex/height", 7)
        wait(lambda: value_of("/dinosaurs/trex/height") == "7", timeout=1.0, what="the TCP write in the page")
        elapsed = time.monotonic() - started
        print("tcp write shown after %.0f ms" % (elapsed * 1000))
        check("flash" in (node("/dinosaurs/trex/height").get_attribute("class") or ""), "the change is not highlighted")
        tcp.set("/dinosaurs/raptor", {"height": 2, "length": 3})
        wait(lambda: node("/dinosaurs/raptor") is not None, timeout=1.0, what="a new child from TCP")

        # 3. An edit made in the page (keyboard: Enter on a leaf edits it) is read back over TCP.
        find('#tree [data-path="/greeting"] > .row > .key').send_keys(Keys.ENTER)
        editor = wait(lambda: find('#tree [data-path="/greeting"] > [data-role="editor"]'), what="the editor")
        Select(editor.find_element(By.NAME, "type")).select_by_value("string")
        value_input = editor.find_element(By.NAME, "value")
        value_input.clear()
        value_input.send_keys("hi from the console", Keys.ENTER)
        wait(lambda: tcp.get("/greeting") == "hi from the console", what="the page's edit over TCP")
        wait(lambda: value_of("/greeting") == '"hi from the console"', what="the edit in the tree")
        find('#tree [data-path="/dinosaurs/trex/height"] > .row > .key').send_keys(Keys.ENTER)
        editor = wait(lambda: find('#tree [data-path="/dinosaurs/trex/height"] > [data-role="editor"]'), what="editor")
        Select(editor.find_element(By.NAME, "type")).select_by_value("number")
        value_input = editor.find_element(By.NAME, "value")
        value_input.clear()
        value_input.send_keys("8", Keys.ENTER)
        wait(lambda: tcp.get("/dinosaurs/trex/height") == 8, what="a number edited in the page, over TCP")
        # Rename by copy (one atomic PATCH), then delete, both read back over TCP.
        def action(path, name):
            find('#tree [data-path="%s"] > .row > .key' % path).click()  # selects; shows the row's buttons
            find('#tree [data-path="%s"] > .row button[aria-label^="%s "]' % (path, name)).click()
        action("/dinosaurs/raptor", "Rename")
        editor = wait(lambda: find('#tree [data-path="/dinosaurs/raptor"] > [data-role="editor"]'), what="rename")
        key_input = editor.find_element(By.NAME, "key")
        key_input.clear()
        key_input.send_keys("velociraptor", Keys.ENTER)
        wait(lambda: tcp.get("/dinosaurs/velociraptor") == {"height": 2, "length": 3} and tcp.get("/dinosaurs/raptor") is None,
             what="the rename over TCP")
        wait(lambda: node("/dinosaurs/velociraptor") is not None and node("/dinosaurs/raptor") is None,
             what="the rename in the tree")
        action("/dinosaurs/velociraptor", "Delete")
        wait(lambda: tcp.get("/dinosaurs/velociraptor") is None, what="the delete over TCP")
        wait(lambda: node("/dinosaurs/velociraptor") is None, what="the delete in the tree")
        find('#tree [data-path="/dinosaurs/trex"] > .row > .key').click()
        wait(lambda: find("#selected-path").text == "/dinosaurs/trex", what="the selected path")
        time.sleep(1.2)  # let highlights fade before the screenshot
        driver.save_screenshot(os.path.join(shots, "data.png"))

        # 4. A location with 100,000 children opens in under a second (the first page, with paging).
        started = time.monotonic()
        toggle("/big")
        wait(lambda: node("/big/item000049") is not None and find('#tree [data-path="/big"] [data-role="more"]'),
             timeout=5, what="the first page of /big")
        elapsed = time.monotonic() - started
        print("/big (100000 children) expanded in %.0f ms (%s)" % (elapsed * 1000, shallow_timing("/big.json?shallow")))
        check(elapsed < 1.0, "/big took %.2f s to open" % elapsed)
        more = find('#tree [data-path="/big"] [data-role="more"]')
        check("of 100000" in more.text, "paging does not count 100000 children: " + more.text)
        check(node("/big/item000050") is None, "more than one page rendered")
        more.find_element(By.TAG_NAME, "button").click()
        wait(lambda: node("/big/item000099") is not None, what="the second page of /big")
        # The same location opened from the path bar.
        path_input = find('[data-role="path"] input')
        path_input.clear()
        started = time.monotonic()
        path_input.send_keys("/big", Keys.ENTER)
        wait(lambda: node("/big/item000049") is not None and node("/greeting") is None,
             timeout=5, what="/big from the path bar")
        elapsed = time.monotonic() - started
        print("/big opened from the path bar in %.0f ms (%s)" % (elapsed * 1000, shallow_timing("/big.json?shallow")))
        check(elapsed < 1.0, "/big took %.2f s to open from the path bar" % elapsed)
        tcp.set("/big/item000003", -3)
        wait(lambda: value_of("/big/item000003") == "-3", timeout=1.0, what="a live change under /big")
        path_input.clear()
        path_input.send_keys("/", Keys.ENTER)
        wait(lambda: node("/greeting") is not None, what="back at /")

        # 5. Import a JSON file of 2,000 children into /imported (after a confirmation), with its
        #    progress, then read it back over TCP. The console sends it in parts of 500 children.
        imported = {"k%04d" % i: {"n": i, "name": "item %d" % i} for i in range(2000)}
        imported["k0007"] = {".priority": 7, "n": 7, "name": "item 7"}
        source_file = os.path.join(scratch, "imported.json")
        with open(source_file, "w") as handle:
            json.dump(imported, handle)
        tcp.set("/imported", "placeholder")
        wait(lambda: value_of("/imported") == '"placeholder"', what="/imported in the tree")
        find('#tree [data-path="/imported"] > .row > .key').click()
        wait(lambda: find("#selected-path").text == "/imported", what="/imported selected")
        # Every state the transfer shows, recorded as it happens.
        driver.execute_script("""
            window.transferLog = [];
            const progress = document.getElementById('transfer-progress');
            const state = document.getElementById('transfer-state');
            const record = () => window.transferLog.push({hidden: progress.hidden,
                value: progress.hasAttribute('value') ? progress.value : null, max: progress.max, text: state.textContent});
            const observer = new MutationObserver(record);
            observer.observe(progress, {attributes: true});
            observer.observe(state, {childList: true, characterData: true, subtree: true});""")
        find("#import-file").send_keys(source_file)
        dialog = wait(lambda: find("#confirm-dialog[open]"), what="the import's confirmation")
        check("Replace /imported" in find("#confirm-text").text, "import confirmation: " + find("#confirm-text").text)
        started = time.monotonic()
        find("#confirm-ok").click()
        wait(lambda: find("#transfer-state").text.startswith("imported "), timeout=20,
             what="the import to finish (%s)" % find("#transfer-state").text)
        print("imported 2000 children in %.0f ms: %s" % ((time.monotonic() - started) * 1000, find("#transfer-state").text))
        log = driver.execute_script("return window.transferLog")
        partial = [entry for entry in log if not entry["hidden"] and entry["value"] and 0 < entry["value"] < entry["max"]]
        check(partial and any("of 2000 children" in entry["text"] for entry in partial),
              "no partial progress shown during the import: %s" % log[:8])
        check(find("#transfer-progress").get_attribute("hidden") is not None, "the progress bar stays after the import")
        stored = tcp.get("/imported")
        check(stored == plain(imported), "the import over TCP differs (%d children)" % len(stored or {}))
        check(http_json("/imported/k0007.json?format=export").get(".priority") == 7, "the import lost a priority")
        wait(lambda: (find('#tree [data-path="/imported"] > .row > .value').text == "{2000 children}"),
             what="/imported shown with 2000 children (%s)" % find('#tree [data-path="/imported"] > .row > .value').text)

        # 6. Export /imported: a download equal to a REST GET of the location, with progress.
        driver.execute_script("window.transferLog.length = 0")
        find("#export-button").click()
        exported_file = os.path.join(downloads, "hearth-imported.json")
        wait(lambda: os.path.exists(exported_file) and not [name for name in os.listdir(downloads) if name.endswith(".crdownload")],
             timeout=20, what="the export's download (%s)" % os.listdir(downloads))
        wait(lambda: find("#transfer-state").text.startswith("exported "), what="the export to finish")
        with open(exported_file) as handle:
            exported = json.load(handle)
        check(exported == http_json("/imported.json?format=export"), "the export differs from GET ?format=export")
        check(plain(exported) == http_json("/imported.json"), "the export differs from GET")
        check(exported["k0007"].get(".priority") == 7, "the export has no priorities")
        log = driver.execute_script("return window.transferLog")
        check(any(not entry["hidden"] and entry["value"] and "KiB" in entry["text"] for entry in log),
              "no progress shown during the export: %s" % log[:8])
        print("exported: " + find("#transfer-state").text)

        # 7. Deleting a location with many children asks first: dismissed, the data stays;
        #    accepted (from the keyboard: Delete on the key, Tab to the dialog's Delete, Enter), it goes.
        find('#tree [data-path="/imported"] > .row > .key').click()
        find('#tree [data-path="/imported"] > .row button[aria-label^="Delete "]').click()
        wait(lambda: find("#confirm-dialog[open]"), what="the delete's confirmation")
        check("2000 children" in find("#confirm-text").text, "delete confirmation: " + find("#confirm-text").text)
        find('#confirm-dialog button[value="cancel"]').click()
        wait(lambda: find("#confirm-dialog[open]") is None, what="the dismissed confirmation to close")
        time.sleep(0.5)
        check(len(tcp.get("/imported") or {}) == 2000, "a dismissed delete deleted")
        check(node("/imported") is not None, "a dismissed delete removed the node")
        find('#tree [data-path="/imported"] > .row > .key').send_keys(Keys.DELETE)
        wait(lambda: find("#confirm-dialog[open]"), what="the delete's confirmation (keyboard)")
        press(Keys.TAB)
        check(driver.switch_to.active_element.get_attribute("id") == "confirm-ok", "Tab does not reach the dialog's Delete")
        press(Keys.ENTER)
        wait(lambda: tcp.get("/imported") is None, what="the accepted delete over TCP")
        wait(lambda: node("/imported") is None, what="the accepted delete in the tree")

        # 8. The keyboard alone: Tab from the path bar into the tree, arrows to a value, Enter to edit,
        #    Escape cancels, Enter again, type, Enter saves; then back up and collapse.
        def active_path():
            return driver.execute_script(
                "const e = document.activeElement; return e && e.matches('#tree .key') ? e.closest('[data-path]').dataset.path : null")

        def arrow_to(path, key=Keys.ARROW_DOWN, limit=20):
            for _ in range(limit):
                if active_path() == path:
                    return
                press(key)
            check(active_path() == path, "the arrows did not reach %s (at %s)" % (path, active_path()))

        driver.execute_script("document.getElementById('path-input').focus()")
        for _ in range(12):
            if active_path() is not None:
                break
            press(Keys.TAB)
        check(active_path() == "/", "Tab does not reach the tree's root (at %s)" % active_path())
        arrow_to("/dinosaurs")
        check(find("#selected-path").text == "/dinosaurs", "the selection does not follow the focus")
        press(Keys.ARROW_RIGHT)  # expands
        wait(lambda: node("/dinosaurs/stegosaurus") is not None, what="/dinosaurs expanded with →")
        press(Keys.ARROW_RIGHT)  # to the first child
        check(active_path() == "/dinosaurs/bruhathkayosaurus", "→ on an open node: at %s" % active_path())
        arrow_to("/dinosaurs/stegosaurus")
        press(Keys.ARROW_RIGHT)
        wait(lambda: node("/dinosaurs/stegosaurus/height") is not None, what="/dinosaurs/stegosaurus expanded with →")
        arrow_to("/dinosaurs/stegosaurus/height")
        press(Keys.ENTER)
        wait(lambda: find('#tree [data-path="/dinosaurs/stegosaurus/height"] > [data-role="editor"]'), what="the editor (Enter)")
        press(Keys.ESCAPE)
        wait(lambda: find('#tree [data-path="/dinosaurs/stegosaurus/height"] > [data-role="editor"]') is None, what="Escape to cancel")
        check(active_path() == "/dinosaurs/stegosaurus/height", "Escape does not give the focus back (at %s)" % active_path())
        press(Keys.ENTER)
        wait(lambda: driver.switch_to.active_element.get_attribute("name") == "value", what="the focus in the editor's value")
        ActionChains(driver).key_down(Keys.CONTROL).send_keys("a").key_up(Keys.CONTROL).send_keys("5", Keys.ENTER).perform()
        wait(lambda: tcp.get("/dinosaurs/stegosaurus/height") == 5, what="the keyboard edit over TCP")
        wait(lambda: value_of("/dinosaurs/stegosaurus/height") == "5", what="the keyboard edit in the tree")
        check(active_path() == "/dinosaurs/stegosaurus/height", "saving does not give the focus back (at %s)" % active_path())
        press(Keys.ARROW_LEFT)  # to the parent
        check(active_path() == "/dinosaurs/stegosaurus", "← on a leaf: at %s" % active_path())
        press(Keys.ARROW_LEFT)  # collapses
        wait(lambda: node("/dinosaurs/stegosaurus/height") is None, what="← to collapse")

        # 9. Query: order by child, live, with its equivalents.
        find('[data-tab="query"]').click()
        form = wait(lambda: find('[data-role="query"]'), what="the query panel")
        def fill(name, text):
            element = form.find_element(By.NAME, name)
            element.clear()
            if text:
                element.send_keys(text)
        fill("path", "/dinosaurs")
        Select(form.find_element(By.NAME, "orderBy")).select_by_value("child")
        fill("child", "height")
        fill("startAt", "3")
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()

        def result_keys():
            return [li.get_attribute("data-key") for li in driver.find_elements(By.CSS_SELECTOR, "#query-result li")]
        expected = ["stegosaurus", "trex", "bruhathkayosaurus"]
        wait(lambda: result_keys() == expected, what="the query's order %s (got %s)" % (expected, result_keys()))
        tcp.set("/dinosaurs/stegosaurus/height", 30)
        expected = ["trex", "bruhathkayosaurus", "stegosaurus"]
        wait(lambda: result_keys() == expected, timeout=2, what="the live reorder (got %s)" % result_keys())
        check("--order-by-child" in find("#eq-cli").text and "--start-at" in find("#eq-cli").text,
              "CLI equivalent: " + find("#eq-cli").text)
        check('orderBy=%22height%22' in find("#eq-rest").text, "REST equivalent: " + find("#eq-rest").text)
        check('queryOrdered(byChild: "height")' in find("#eq-swift").text, "Swift equivalent: " + find("#eq-swift").text)
        check('"hearth://127.0.0.1:%d"' % tcp_port in find("#eq-swift").text,
              "the Swift equivalent's URL names the line protocol's port: " + find("#eq-swift").text)
        time.sleep(1.2)
        driver.save_screenshot(os.path.join(shots, "query.png"))

        # 10. Rules: an invalid edit shows the server's error at its line and keeps the old rules.
        find('[data-tab="rules"]').click()
        area = wait(lambda: find('[data-role="rules"] textarea'), what="the rules editor")
        wait(lambda: ".read" in area.get_attribute("value"), what="the rules in the editor")
        before = http_json("/.settings/rules.json")
        bad = '{\n  "rules": {\n    ".read": "auth != null",\n    ".write": "auth.uid ===",\n    "big": {".indexOn": ".value"}\n  }\n}'
        driver.execute_script(
            "arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input'));", area, bad)
        find("#rules-save").click()
        error = wait(lambda: find("#rules-error") if find("#rules-error").text else None, what="the rules error")
        print("rules error: " + error.text)
        check(error.get_attribute("data-line") == "4", "the error is not at line 4: " + error.text)
        check(find('#rules-gutter .bad[data-line="4"]') is not None, "line 4 is not marked")
        check(http_json("/.settings/rules.json") == before, "the old rules did not stay")

        # The simulator: a read as nobody, then as a user.
        simulator = find('[data-role="simulator"]')
        Select(simulator.find_element(By.NAME, "op")).select_by_value("get")
        path_field = simulator.find_element(By.NAME, "path")
        path_field.clear()
        path_field.send_keys("/dinosaurs")
        Select(simulator.find_element(By.NAME, "as")).select_by_value("null")
        simulator.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        wait(lambda: find("#sim-result").get_attribute("data-allowed") == "false", what="a denied simulation")
        Select(simulator.find_element(By.NAME, "as")).select_by_value("uid")
        simulator.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        wait(lambda: find("#sim-result").get_attribute("data-allowed") == "true", what="an allowed simulation")
        driver.execute_script("window.scrollTo(0, 0)")
        driver.save_screenshot(os.path.join(shots, "rules.png"))

        # 11. Server: live numbers and charts from /.well-known/hearth/stats.
        find('[data-tab="server"]').click()
        for i in range(20):
            tcp.set("/counter", i)
            time.sleep(0.15)
        wait(lambda: find('[data-metric="writes"] svg polyline') is not None, what="the server charts")
        def shown_rev():
            text = find('[data-metric="rev"] .number').text.replace(",", "").strip()
            return int(text) if text.isdigit() and int(text) > 0 else None

        wait(shown_rev, what="a revision on the server tab")
        driver.save_screenshot(os.path.join(shots, "server.png"))

        # 11b. Triggers: the chosen database's triggers and their status, refreshed while the panel
        #      shows, and a trigger's dead letters (through /.well-known/hearth/triggers).
        added = tcp.request({"op": "addTrigger", "trigger": {
            "name": "notify", "path": "/messages/{id}", "on": ["create"], "url": "http://127.0.0.1:9/hook",
            "secret": "console-check-hook-secret-0123456789"}})
        assert added.get("ok"), added
        find('[data-tab="triggers"]').click()
        wait(lambda: find('#triggers-table tr[data-trigger="notify"]'), what="the trigger's row")
        # Read and clicked in one script each: the rows are drawn anew at every refresh.
        notify = "#triggers-table tr[data-trigger=notify]"
        cells = driver.execute_script(
            "return [...document.querySelectorAll(arguments[0] + ' td')].map((td) => td.textContent)", notify)
        check(cells[:4] == ["notify", "/messages/{id}", "create", "http://127.0.0.1:9/hook"], "the trigger's row: %s" % cells)
        state = driver.execute_script("return document.querySelector(arguments[0]).dataset.state", notify)
        check(state in ("idle", "delivering", "retrying"), "the trigger's state: %s" % state)
        check("console-check-hook-secret" not in driver.page_source, "the page never holds a trigger's secret")
        added = tcp.request({"op": "addTrigger", "trigger": {
            "name": "audit", "path": "/orders/{id}", "url": "http://127.0.0.1:9/audit",
            "secret": "console-check-hook-secret-0123456789"}})
        assert added.get("ok"), added
        wait(lambda: find('#triggers-table tr[data-trigger="audit"]'), what="a new trigger shown by the refresh")
        driver.execute_script("document.querySelector(arguments[0] + ' button').click()", notify)
        wait(lambda: not find("#dead-letters").get_attribute("hidden")
             and find("#dead-letters").get_attribute("data-trigger") == "notify"
             and find("#dead-letters-table tbody tr"), what="the trigger's dead letters")
        check(find("#dead-letters-name").text == "notify", "the dead letters' trigger")
        find("#dead-letters-close").click()
        check(find("#dead-letters").get_attribute("hidden") is not None, "the dead letters close")
        for name in ("notify", "audit"):
            removed = tcp.request({"op": "removeTrigger", "name": name})
            assert removed.get("ok"), removed
        wait(lambda: not find('#triggers-table tr[data-trigger="notify"]'), what="the removed triggers gone")

        # 12. Databases: the picker lists them and creates one, and every request of the page
        #     addresses the chosen one (`ns`): the tree, its stream, the query, the rules.
        find('[data-tab="data"]').click()

        def current():
            return find('[data-role="database"]').get_attribute("data-ns")

        def picker_options():
            return [o.get_attribute("value") for o in driver.find_elements(By.CSS_SELECTOR, "#db-select option")]

        def picker_state():
            return find("#db-state").text

        wait(lambda: find('#db-select option[value=""]').text == "default",
             what="the default database in the picker (got %r)" % find('#db-select option[value=""]').text)
        check(current() == "", "the console starts on another database than the default: %r" % current())
        check(find("#db-create").is_displayed(), "an admin is not offered Create")
        # A bad name: the server's message, and the console stays where it is.
        name_field = find("#db-name")
        name_field.send_keys("Not_A_Name")
        find("#db-create").click()
        wait(lambda: "invalid database name" in picker_state(), what="the server's message for a bad name",
             page=picker_state)
        check(find("#db-state").get_attribute("data-state") == "error", "the bad name is not shown as an error")
        print("bad name: " + picker_state())
        check(current() == "", "a refused name switched the database")
        # Create "shop" through the picker: it is listed, chosen, and kept in the page's URL.
        name_field.clear()
        name_field.send_keys("shop")
        find("#db-create").click()
        wait(lambda: current() == "shop", what="the created database chosen", page=picker_state)
        check("shop" in picker_options(), "shop is not listed: %s" % picker_options())
        check("ns=shop" in driver.current_url, "the page's URL does not keep the database: " + driver.current_url)
        listed = [info["name"] for info in http_json("/.well-known/hearth/databases")["databases"]]
        check("shop" in listed, "the server does not list shop: %s" % listed)
        wait(lambda: node("/") is not None and node("/greeting") is None, what="the root of the new database")
        wait(lambda: "● live" in find("#live-state").text, what="the stream on shop")
        # A value written through the console lands in shop, not in the default database.
        shop = LineClient(tcp_port, admin, db="shop")
        action("/", "Add")
        editor = wait(lambda: find('#tree [data-path="/"] > [data-role="editor"]'), what="the root's Add editor")
        editor.find_element(By.NAME, "key").send_keys("only-in-shop")
        Select(editor.find_element(By.NAME, "type")).select_by_value("string")
        editor.find_element(By.NAME, "value").send_keys("here", Keys.ENTER)
        wait(lambda: value_of("/only-in-shop") == '"here"', what="the value in shop's tree")
        wait(lambda: shop.get("/only-in-shop") == "here", what="the page's write in shop, over TCP")
        check(tcp.get("/only-in-shop") is None, "the page's write went to the default database")
        # The stream follows shop: a write there over TCP shows.
        shop.set("/from-tcp", 1)
        wait(lambda: value_of("/from-tcp") == "1", timeout=2, what="a TCP write to shop, live in the page")
        # The query runs on shop (the one still running from the query panel ran again there).
        find('[data-tab="query"]').click()
        fill("path", "/")
        Select(form.find_element(By.NAME, "orderBy")).select_by_value("key")
        fill("child", "")
        fill("startAt", "")
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        wait(lambda: result_keys() == ["from-tcp", "only-in-shop"], what="the query on shop (got %s)" % result_keys())
        check("ns=shop" in find("#eq-rest").text, "REST equivalent without the database: " + find("#eq-rest").text)
        check("--db shop" in find("#eq-cli").text, "CLI equivalent without the database: " + find("#eq-cli").text)
        check(":%d/?ns=shop\"" % tcp_port in find("#eq-swift").text, "Swift equivalent: " + find("#eq-swift").text)
        # The rules panel reads and saves shop's rules; the default database's stay as they were.
        default_rules = http_json("/.settings/rules.json")
        find('[data-tab="rules"]').click()
        area = find('[data-role="rules"] textarea')
        wait(lambda: ".read" in area.get_attribute("value") and "auth.uid ===" not in area.get_attribute("value"),
             what="shop's rules in the editor")
        shop_rules = '{\n  "rules": {\n    ".read": "auth != null",\n    ".write": "auth != null",\n    "shop": {".indexOn": "n"}\n  }\n}'
        driver.execute_script(
            "arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input'));", area, shop_rules)
        find("#rules-save").click()
        wait(lambda: find("#rules-state").text.startswith("saved"), what="shop's rules saved",
             page=lambda: find("#rules-error").text)
        check("shop" in http_json("/.settings/rules.json?ns=shop")["rules"], "shop's rules were not saved in shop")
        check(http_json("/.settings/rules.json") == default_rules, "saving shop's rules changed the default's")
        # A reload stays on shop.
        find('[data-tab="data"]').click()
        driver.refresh()
        wait(lambda: find("#tree") is not None and current() == "shop", what="shop after a reload")
        wait(lambda: value_of("/only-in-shop") == '"here"', what="shop's value after a reload")
        # Back to the default database: it does not have the value.
        Select(find("#db-select")).select_by_value("")
        wait(lambda: current() == "" and "ns=" not in driver.current_url, what="the default database chosen")
        wait(lambda: value_of("/greeting") is not None and "● live" in find("#live-state").text,
             what="the default database's tree, live")
        check(node("/only-in-shop") is None and node("/from-tcp") is None, "shop's values show in the default database")
        # And shop again: every read the page starts from then on (resource timing) names it.
        switched_at = driver.execute_script("performance.clearResourceTimings(); return performance.now()")
        Select(find("#db-select")).select_by_value("shop")
        wait(lambda: value_of("/only-in-shop") == '"here"' and node("/greeting") is None, what="shop's value again")
        wait(lambda: "● live" in find("#live-state").text, what="the stream on shop again")
        reads = driver.execute_script(
            "return performance.getEntriesByType('resource').filter((e) => e.startTime >= arguments[0])"
            ".map((e) => e.name).filter((n) => n.includes('.json'))", switched_at)
        check(reads and all("ns=shop" in url for url in reads), "reads without the database: %s" % reads)
        find('#tree [data-path="/only-in-shop"] > .row > .key').click()
        time.sleep(1.2)
        driver.save_screenshot(os.path.join(shots, "database.png"))
        # A typed bad name: the server's message, and the console stays on shop.
        name_field = find("#db-name")
        name_field.send_keys("Bad!", Keys.ENTER)
        wait(lambda: "invalid database name" in picker_state(), what="the message for a typed bad name",
             page=picker_state)
        check(current() == "shop", "a refused name switched the database")
        # Signed out, the list is refused: no Create, but a typed name still opens.
        name_field.clear()
        find("#signout").click()
        wait(lambda: "admin secret" in picker_state(), what="the refused list", page=picker_state)
        check(not find("#db-create").is_displayed(), "Create is offered without an admin secret")
        Select(find("#db-select")).select_by_value("")
        wait(lambda: current() == "", what="the default database, signed out")
        name_field.send_keys("shop", Keys.ENTER)
        wait(lambda: current() == "shop", what="a typed name opened, signed out", page=picker_state)
        find("#auth-input").send_keys(admin, Keys.ENTER)
        wait(lambda: value_of("/only-in-shop") == '"here"', what="shop's value, signed in again")
        wait(lambda: find("#db-create").is_displayed(), what="Create offered again")

        # 13. Inspect: the picker's Info panel shows the chosen database's information from
        #     GET /.well-known/hearth/databases/<name>, read again on Refresh.
        databases = http_json("/.well-known/hearth/databases")["databases"]
        data_dir = os.path.normpath(next(info["directory"] for info in databases if info["default"]))
        find("#db-info-button").click()
        panel = find('[data-role="database-info"]')
        wait(lambda: panel.is_displayed() and panel.get_attribute("data-name") == "shop",
             what="shop's information", page=lambda: find("#db-info-state").text)

        def field(name):
            return panel.find_element(By.CSS_SELECTOR, '[data-field="%s"]' % name).text

        def server_rev():
            return http_json("/.well-known/hearth/databases/shop").get("rev")

        shown = int(panel.get_attribute("data-rev"))
        shop.set("/inspected", True)
        wait(lambda: (server_rev() or 0) > shown, what="shop's rev to pass %d after a write" % shown)
        info = http_json("/.well-known/hearth/databases/shop")
        find("#db-refresh").click()
        wait(lambda: panel.get_attribute("data-rev") == str(info["rev"]),
             what="the rev %s after Refresh (shown: %r)" % (info["rev"], panel.get_attribute("data-rev")),
             page=lambda: find("#db-info-state").text)
        check(field("rev") == str(info["rev"]) and field("open") == "open", "rev and state: %r %r" % (field("rev"), field("open")))
        check(field("directory") == info["directory"] and os.path.normpath(info["directory"]) == os.path.join(data_dir, "databases", "shop"),
              "shop's folder: %r (server: %r, data directory %r)" % (field("directory"), info["directory"], data_dir))
        check(re.fullmatch(r"\d+(\.\d)? (B|KiB|MiB|GiB)( \([\d,]+ bytes\))?", field("bytes")) is not None,
              "the size on disk in human units: %r" % field("bytes"))
        check(field("connections").isdigit() and field("quotas") == "none",
              "connections and quotas: %r %r" % (field("connections"), field("quotas")))
        print("inspect shop: rev %s, %s, %s connections" % (field("rev"), field("bytes"), field("connections")))
        time.sleep(1.2)
        driver.save_screenshot(os.path.join(shots, "database-info.png"))

        # 14. Delete (admins, not the default database): a wrongly typed name deletes nothing;
        #     the right one moves shop to the trash under the data directory, and the console
        #     is on the default database; purged, another one leaves nothing behind.
        check(find("#db-delete").is_displayed(), "an admin is not offered Delete on shop")
        find("#db-delete").click()
        wait(lambda: find("#db-delete-dialog[open]"), what="the delete confirmation")
        confirm = find("#db-delete-confirm")
        confirm.send_keys("shopx", Keys.ENTER)
        wait(lambda: "nothing was deleted" in find("#db-delete-error").text, what="the refused confirmation")
        check(find("#db-delete-dialog[open]") is not None, "a wrong name closed the confirmation")
        check("shop" in [i["name"] for i in http_json("/.well-known/hearth/databases")["databases"]],
              "a wrong name deleted shop")
        check(current() == "shop", "a wrong name left shop")
        check(not find("#db-delete-purge").is_selected(), "purge is chosen by default")
        confirm.clear()
        confirm.send_keys("shop")
        find("#db-delete-ok").click()
        wait(lambda: find("#db-state").get_attribute("data-moved-to"), what="where shop went", page=picker_state)
        moved_to = find("#db-state").get_attribute("data-moved-to")
        print("deleted: " + picker_state())
        check(moved_to in picker_state(), "the console does not say where the data went: " + picker_state())
        check(moved_to.startswith(os.path.join(data_dir, "trash", "shop-")), "moved to %r, not the trash of %r" % (moved_to, data_dir))
        check(os.path.isdir(moved_to), "the trash folder %s does not exist" % moved_to)
        check(not os.path.exists(info["directory"]), "shop's folder is still there")
        wait(lambda: "shop" not in picker_options(), what="shop gone from the picker (%s)" % picker_options())
        check(current() == "" and "ns=" not in driver.current_url, "the console is not on the default database")
        listed = [i["name"] for i in http_json("/.well-known/hearth/databases")["databases"]]
        check("shop" not in listed, "the server still lists shop: %s" % listed)
        wait(lambda: value_of("/greeting") is not None and "● live" in find("#live-state").text,
             what="the default database's tree, live")
        wait(lambda: panel.get_attribute("data-name") == "default", what="the default database's information")
        check(not find("#db-delete").is_displayed(), "Delete is offered on the default database")
        name_field.send_keys("scratch")
        find("#db-create").click()
        wait(lambda: current() == "scratch" and panel.get_attribute("data-name") == "scratch",
             what="scratch created and inspected", page=picker_state)
        scratch_dir = panel.get_attribute("data-directory")
        find("#db-delete").click()
        wait(lambda: find("#db-delete-dialog[open]"), what="the delete confirmation")
        confirm.send_keys("scratch")
        find("#db-delete-purge").click()
        confirm.send_keys(Keys.ENTER)
        wait(lambda: "purged" in picker_state() and current() == "", what="scratch purged", page=picker_state)
        check(not os.path.exists(scratch_dir), "scratch's folder is still there")
        check(not any(n.startswith("scratch-") for n in os.listdir(os.path.join(data_dir, "trash"))),
              "a purged database went to the trash")
        # The server's refusals show beside the picker: the default database, an unknown one.
        driver.execute_script("hearthConsole.deleteDatabase('default', false)")
        wait(lambda: "cannot be deleted" in picker_state(), what="the refusal to delete the default database",
             page=picker_state)
        check(find("#db-state").get_attribute("data-state") == "error" and current() == "", "after the refusal")
        print("default: " + picker_state())
        driver.execute_script("hearthConsole.deleteDatabase('nosuch', false)")
        wait(lambda: "no database named" in picker_state(), what="the 404 for an unknown database", page=picker_state)
        check(current() == "", "a refused delete left the default database")
        # Signed out: no Delete.
        find("#signout").click()
        wait(lambda: "admin secret" in picker_state(), what="the refused list", page=picker_state)
        check(not find("#db-delete").is_displayed(), "Delete is offered without an admin secret")
        shop.sock.close()
    finally:
        logs = []
        try:
            logs = [entry for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]
        except Exception:
            pass
        for entry in logs:
            print("browser: " + entry.get("message", ""))
        driver.quit()
        shutil.rmtree(scratch, ignore_errors=True)
    check(not any("favicon" in entry.get("message", "") for entry in logs), "the browser could not load the icon")
    print("ok")


if __name__ == "__main__":
    main()
