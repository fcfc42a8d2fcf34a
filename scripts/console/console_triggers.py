#!/usr/bin/env python3
"""Drives the web console's Triggers panel in headless Chromium against a running server.

Usage: console_triggers.py HTTP_PORT TCP_PORT ADMIN_SECRET SCREENSHOT_DIR

The server must have rules, the admin secret given, and one trigger of its configuration,
"audit" on /orders/{id}; it must run on the real clock (a delivery's retries and maximum age are
timed). The script runs its own receiver, which answers 503 until told otherwise. Checks, in a
real browser: signed out, the panel says the triggers are for admins; signed in, it lists the
configured trigger and one added over TCP (never its secret); a write whose delivery keeps
failing past the trigger's maxAgeSeconds shows in the trigger's status and as a dead letter;
once the receiver answers, Replay sends it again (the receiver gets the same event id) and the
dead letter leaves the list. Saves triggers.png in SCREENSHOT_DIR. Prints "ok" last.
"""
import http.server
import json
import os
import sys
import threading
import time

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from browser import check, start_chromium, wait_until
from console_check import LineClient

SECRET = "console-triggers-hook-secret-0123456789"


class Receiver(http.server.BaseHTTPRequestHandler):
    """Records each delivery's event id, answering the class's `status`."""
    status = 503
    events = []

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(length)
        Receiver.events.append((self.headers.get("Hearth-Event-Id"), Receiver.status))
        self.send_response(Receiver.status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *arguments):
        pass


def main():
    http_port, tcp_port, admin, shots = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    os.makedirs(shots, exist_ok=True)
    base = "http://127.0.0.1:%d" % http_port
    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    tcp = LineClient(tcp_port, admin)

    driver = start_chromium(["--force-device-scale-factor=1"])
    driver.set_window_size(1280, 800)
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False})

    def find(selector):
        found = driver.find_elements(By.CSS_SELECTOR, selector)
        return found[0] if found else None

    def panel():
        return find("#panel-triggers").text

    def wait(condition, timeout=10, what="condition"):
        return wait_until(driver, condition, timeout, what, page=panel)

    def cells(selector):
        # Read in one script: the rows are drawn anew at every refresh.
        return driver.execute_script(
            "return [...document.querySelectorAll(arguments[0] + ' td')].map((td) => td.textContent)", selector)

    def click(selector):
        driver.execute_script("document.querySelector(arguments[0]).click()", selector)

    try:
        # 1. Signed out: the panel says the triggers are for admins.
        driver.get(base + "/")
        find('[data-tab="triggers"]').click()
        wait(lambda: "for admins" in find("#triggers-state").text, what="the refusal")

        # 2. Signed in: the configured trigger, then one added over TCP, with their status.
        find("#auth-input").send_keys(admin, Keys.ENTER)
        wait(lambda: find('#triggers-table tr[data-trigger="audit"]'), what="the configured trigger")
        added = tcp.request({"op": "addTrigger", "trigger": {
            "name": "notify", "path": "/messages/{id}", "on": ["create"],
            "url": "http://127.0.0.1:%d/hook" % receiver.server_address[1], "secret": SECRET, "maxAgeSeconds": 1,
            "timeoutMs": 2000}})
        assert added.get("ok"), added
        notify = '#triggers-table tr[data-trigger="notify"]'
        wait(lambda: find(notify), what="the added trigger, shown by the refresh")
        names = driver.execute_script(
            "return [...document.querySelectorAll('#triggers-table tr[data-trigger]')].map((tr) => tr.dataset.trigger)")
        check(names == ["audit", "notify"], "configured triggers first: %s" % names)
        check(cells(notify)[:5] == ["notify", "/messages/{id}", "create", added["trigger"]["url"], "idle"],
              "the trigger's row: %s" % cells(notify))

        # 3. A delivery that keeps failing: retried, then a dead letter after its maximum age.
        tcp.set("/messages/m1", {"text": "hi"})
        wait(lambda: cells(notify)[11] == "1", timeout=15, what="the trigger's dead letter counted")
        check(int(cells(notify)[9]) >= 1 and "503" in cells(notify)[13], "failed, with the last error: %s" % cells(notify))
        click(notify + " button")
        event = "#dead-letters-table tr[data-event]"
        wait(lambda: find(event), what="the dead letter")
        letter = cells(event)
        check(letter[2:4] == ["/messages/m1", "create"] and letter[0].endswith(":/messages/m1") and "503" in letter[6],
              "the dead letter's row: %s" % letter)
        check(SECRET not in driver.page_source, "the page never holds a trigger's secret")
        driver.execute_script("document.activeElement.blur()")
        time.sleep(0.3)
        driver.save_screenshot(os.path.join(shots, "triggers.png"))

        # 4. The receiver answers again: Replay sends the event (its id unchanged), and it leaves the list.
        Receiver.status = 200
        click(event + " button")
        wait(lambda: find("#dead-letters-state").text == "queued 1 for delivery", what="the replay's answer")
        wait(lambda: (letter[0], 200) in Receiver.events, what="the replayed delivery")
        wait(lambda: not find(event) and "no dead letters" in find("#dead-letters-table").text,
             what="the dead letter gone")
        wait(lambda: cells(notify)[11] == "0", what="no dead letter counted")
        click("#dead-letters-close")
        check(find("#dead-letters").get_attribute("hidden") is not None, "the dead letters close")
    finally:
        driver.quit()
        receiver.shutdown()
    print("ok")


if __name__ == "__main__":
    main()
