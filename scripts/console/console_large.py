#!/usr/bin/env python3
"""Drives hearthd's web console in headless Chromium against a server whose root is large.

Usage: console_large.py HTTP_PORT

The server must be open (no rules), hold /small (a few bytes) and /big (more than the console's
LIVE_BYTES, 4 MiB), and have a maxOutboundBytes below /big's size. Checks that the console does
not open a stream on / (the server's stream count, sampled throughout, stays 0) and says why;
that it follows a small location live; and that a stream the server keeps closing ("Follow
anyway") is retried a few times, later and later, then stopped with the reason shown, or goes
live; and that a query on the root is stopped with the reason when the server closes its
stream before its first event, or goes live. Prints "ok" last.
"""
import json
import sys
import threading
import time
import urllib.request

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from browser import check, start_chromium, wait_until


def main():
    base = "http://127.0.0.1:%d" % int(sys.argv[1])

    def streams():
        with urllib.request.urlopen(base + "/.well-known/hearth/stats") as answer:
            return json.loads(answer.read())["sseStreams"]

    # The most streams the server had open at once, sampled every 50 ms.
    seen = {"max": 0}
    sampling = threading.Event()

    def sample():
        while not sampling.is_set():
            seen["max"] = max(seen["max"], streams())
            time.sleep(0.05)

    driver = start_chromium()

    def wait(condition, timeout=10, what="condition"):
        return wait_until(driver, condition, timeout, what, page=lambda: live().text)

    def find(selector):
        found = driver.find_elements(By.CSS_SELECTOR, selector)
        return found[0] if found else None

    def live():
        return find("[data-role=live]")

    def state():
        return live().get_attribute("data-state")

    def open_location(path):
        field = find("#path-input")
        field.clear()
        field.send_keys(path, Keys.ENTER)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        # 1. The root is larger than the console follows: no stream, and the page says why.
        driver.get(base + "/")
        wait(lambda: state() == "stopped", what="the size check of /")
        text = live().text
        check("not live" in text and "MiB" in text and "narrower location" in text, "unexpected state: " + text)
        check(int(live().get_attribute("data-size")) > 4 << 20, "data-size: " + str(live().get_attribute("data-size")))
        wait(lambda: find('#tree [data-path="/small"]') is not None, what="/small in the tree")
        time.sleep(1.0)
        check(seen["max"] == 0, "the console opened a stream on the large root (%d)" % seen["max"])

        # 2. A small location is followed live, with one stream.
        open_location("/small")
        wait(lambda: state() == "live", what="the stream of /small")
        wait(lambda: streams() == 1, timeout=3, what="one stream on the server")

        # 3. Back at the root: its stream is closed, and none is opened.
        open_location("/")
        wait(lambda: state() == "stopped", what="the size check of / again")
        wait(lambda: streams() == 0, timeout=3, what="the stream of /small closed")

        # 4. Followed anyway: the server closes a stream whose first event passes its
        #    maxOutboundBytes; the console tries a few times, later and later, then stops and says
        #    why (or goes live, on a server that sends such a first event whole).
        find("[data-role=live] button").click()
        started = time.time()
        wait(lambda: state() != "stopped", timeout=2, what="following anyway")
        wait(lambda: state() in ("live", "stopped"), timeout=15, what="the stream to go live or stop")
        tries = int(live().get_attribute("data-tries") or 0)
        if state() == "stopped":
            check("times before its first event" in live().text, "unexpected state: " + live().text)
            check(tries == 3, "%d tries" % tries)
            check(time.time() - started > 4, "the retries were not spaced out")
            time.sleep(3)
            check(int(live().get_attribute("data-tries") or 0) == tries, "it kept retrying")
            check(streams() == 0, "a stream is still open")
            print("followed anyway: stopped after %d tries in %.1f s: %s" % (tries, time.time() - started, live().text))
        else:
            print("followed anyway: live after %d tries" % tries)

        # 5. A query on the root, whose result is as large: stopped with the reason, or live.
        open_location("/small")
        wait(lambda: state() == "live", what="the stream of /small")
        find("[data-tab=query]").click()
        find("#query-form button[type=submit]").click()
        wait(lambda: find("#query-state").text in ("stopped",) or "live" in find("#query-state").text,
             timeout=15, what="the query to go live or stop")
        if find("#query-state").text == "stopped":
            error = find("#query-error").text
            check("before its first event" in error and "MiB" in error, "query error: " + error)
            print("query on /: " + error)
            time.sleep(2)
            check(find("#query-state").text == "stopped", "the query restarted")
            wait(lambda: streams() == 1, timeout=3, what="only the stream of /small")
            check(tries <= 3, "%d tries before going live" % tries)
        print("ok")
    finally:
        sampling.set()
        driver.quit()


if __name__ == "__main__":
    main()
