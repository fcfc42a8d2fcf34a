"""The Firebase JS SDK's compat bundles, unmodified, in headless Chromium against hearthd.

    python chromium.py --port HTTP_PORT [--ns demo] [--rules] [--admin-secret S] [--only a,b] [--vectors FILE]
                       [--hearthd BINARY] [--skip-transport]

Serves page.html, the scenarios and the SDK (from $HEARTH_FIREBASE_SDK, else <repo>/.firebase-sdk)
on a port of its own, runs the scenarios of scenarios.js in the page against the server on
HTTP_PORT, and prints the page's JSON lines. With --hearthd it also runs two transport scenarios on
a hearthd of its own, started after the page: "long-poll-fallback" (the page's first WebSocket
attempt fails, so the SDK marks WebSockets as failed in localStorage and falls back to long polling
/.lp, then upgrades) and "ws-url-after-failure" (the same browser, flag set, with a ws:// databaseURL).
Exit status 0 when no scenario failed.

Needs Debian's chromium and chromium-driver (CHROMIUM, CHROMEDRIVER override their paths) and
selenium (the .venv that scripts/python-env.sh makes).
"""

import argparse
import functools
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def bundle(sdk, name):
    """A compat bundle at the SDK folder's top, else inside node_modules/firebase (npm's layout)."""
    top = os.path.join(sdk, name)
    return top if os.path.exists(top) else os.path.join(sdk, "node_modules", "firebase", name)


def emit(line):
    print(json.dumps(line), flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def accepts(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class Files(http.server.SimpleHTTPRequestHandler):
    """This folder, the SDK under /sdk/ and the vectors at /vectors.json."""

    def __init__(self, *args, sdk, vectors, **kwargs):
        self.sdk = sdk
        self.vectors = vectors
        super().__init__(*args, directory=HERE, **kwargs)

    def translate_path(self, path):
        path = path.split("?", 1)[0]
        if path.startswith("/sdk/"):
            return bundle(self.sdk, os.path.basename(path))
        if path == "/vectors.json" and self.vectors:
            return self.vectors
        return super().translate_path(path)

    def log_message(self, *args):
        pass


def serve(sdk, vectors):
    handler = functools.partial(Files, sdk=sdk, vectors=vectors)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def chromium():
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    service = Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
    return webdriver.Chrome(service=service, options=options)


def pump(driver, seen, verdicts):
    """Prints the page's lines not printed yet; collects verdicts."""
    lines = driver.execute_script("return window.hearthLines || []")
    for text in lines[seen:]:
        print(text, flush=True)
        line = json.loads(text)
        if "verdict" in line:
            verdicts.append(line)
    return len(lines)


def lp_requests(driver):
    """The /.lp requests the browser made, from its performance log: [url, status or error]."""
    found = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        params = message.get("params", {})
        if message.get("method") == "Network.requestWillBeSent" and "/.lp" in params.get("request", {}).get("url", ""):
            found.append({"id": params["requestId"], "url": params["request"]["url"], "status": None})
        elif message.get("method") == "Network.responseReceived":
            for request in found:
                if request["id"] == params.get("requestId"):
                    request["status"] = params["response"]["status"]
        elif message.get("method") == "Network.loadingFailed":
            for request in found:
                if request["id"] == params.get("requestId") and request["status"] is None:
                    request["status"] = params.get("errorText")
    return found


class Hearthd:
    """A hearthd of this script's own on a chosen HTTP port, stopped by its pid."""

    def __init__(self, binary, port, ns):
        self.binary, self.port, self.ns = binary, port, ns
        self.data = tempfile.mkdtemp(prefix="hearth-sdk-chromium-")
        self.process = None

    def start(self):
        env = dict(os.environ, HEARTH_DEFAULT_DATABASE=self.ns)
        self.process = subprocess.Popen(
            [self.binary, "--port", "0", "--http-port", str(self.port), "--data-dir", self.data, "--fsync", "never"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        while time.time() < deadline and not accepts(self.port):
            time.sleep(0.05)

    def stop(self):
        if self.process:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.data, ignore_errors=True)


def transport_scenarios(args, files):
    """long-poll-fallback, then ws-url-after-failure in the same browser (same localStorage)."""
    verdicts = []
    port = free_port()
    server = Hearthd(args.hearthd, port, args.ns)
    driver = chromium()
    base = "http://127.0.0.1:%d/page.html?port=%d&ns=%s" % (files.server_address[1], port, args.ns)
    try:
        name = "long-poll-fallback"
        driver.get(base + "&mode=longpoll")
        state = {}
        deadline = time.time() + 8
        while time.time() < deadline:
            state = driver.execute_script("return window.hearthState ? window.hearthState() : {}")
            if state.get("flag") == "true" and state.get("webSocketAttempts", 0) >= 1:
                break
            time.sleep(0.1)
        seen = pump(driver, 0, [])
        emit({"d": "chromium", "s": name, "e": "server down", "state": state})
        server.start()
        emit({"d": "chromium", "s": name, "e": "server started", "port": port})
        deadline = time.time() + 25
        while time.time() < deadline:
            state = driver.execute_script("return window.hearthState()")
            if state.get("acknowledged") is not None and state.get("upgraded"):
                break
            time.sleep(0.2)
        pump(driver, seen, [])
        requests = lp_requests(driver)
        statuses = {}
        for request in requests:
            statuses[str(request["status"])] = statuses.get(str(request["status"]), 0) + 1
        emit({"d": "chromium", "s": name, "e": "after 25 s", "state": state, "lpRequests": len(requests),
              "lpStatuses": statuses, "firstLp": requests[0]["url"] if requests else None})
        connected = True in state.get("connected", [])
        if connected and state.get("acknowledged") and state.get("upgraded"):
            verdict, detail = "PASS", "connected by long polling and upgraded to WebSocket; write acknowledged"
        elif connected and state.get("acknowledged"):
            verdict, detail = "FAIL", "connected and write acknowledged, but no upgrade to WebSocket seen"
        else:
            verdict = "FAIL"
            detail = ("never connected: localStorage firebase:previous_websocket_failure=%s; connection "
                      "attempts by long polling %d, by WebSocket %d (counting the failed one while the server "
                      "was down); /.lp requests %d, answered %s"
                      % (state.get("flag"), state.get("longPollAttempts", 0), state.get("webSocketAttempts", 0),
                         len(requests), json.dumps(statuses)))
        verdicts.append({"d": "chromium", "s": name, "verdict": verdict, "detail": detail})
        emit(verdicts[-1])

        name = "ws-url-after-failure"
        flag_before = driver.execute_script("return localStorage.getItem('firebase:previous_websocket_failure')")
        driver.get(base + "&mode=wsurl")
        deadline = time.time() + 15
        while time.time() < deadline:
            state = driver.execute_script("return window.hearthState ? window.hearthState() : {}")
            if state.get("acknowledged") is not None:
                break
            time.sleep(0.1)
        time.sleep(0.5)
        state = driver.execute_script("return window.hearthState ? window.hearthState() : {}")
        pump(driver, 0, [])
        ok = True in state.get("connected", []) and state.get("acknowledged") is True and state.get("longPollAttempts") == 0
        verdicts.append({"d": "chromium", "s": name, "verdict": "PASS" if ok else "FAIL",
                         "detail": "flag before %s; ws:// databaseURL: connected %s, write acknowledged %s, long-poll attempts %s, flag after %s"
                         % (flag_before, state.get("connected"), state.get("acknowledged"), state.get("longPollAttempts"), state.get("flag"))})
        emit(verdicts[-1])
    finally:
        driver.quit()
        server.stop()
    return verdicts


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ns", default="demo")
    parser.add_argument("--rules", action="store_true")
    parser.add_argument("--admin-secret")
    parser.add_argument("--tcp-port", help="accepted for the runner's sake; the page does not use it")
    parser.add_argument("--only", default="")
    parser.add_argument("--vectors", default=os.path.join(REPO, "Tests", "HearthCoreTests", "Resources", "vectors.json"))
    parser.add_argument("--hearthd")
    parser.add_argument("--skip-transport", action="store_true")
    args = parser.parse_args()
    sdk = os.environ.get("HEARTH_FIREBASE_SDK") or os.path.join(REPO, ".firebase-sdk")
    if not os.path.exists(bundle(sdk, "firebase-database-compat.js")):
        print("The Firebase JS SDK is not in %s: see docs/firebase-sdk.md" % sdk, file=sys.stderr)
        return 2
    files = serve(sdk, args.vectors)
    verdicts = []
    only = [name for name in args.only.split(",") if name]
    page_only = [name for name in only if name not in ("long-poll-fallback", "ws-url-after-failure")]
    if not only or page_only:
        driver = chromium()
        try:
            url = "http://127.0.0.1:%d/page.html?port=%d&ns=%s&only=%s%s%s" % (
                files.server_address[1], args.port, args.ns, ",".join(page_only), "&rules=1" if args.rules else "",
                "&admin=" + urllib.parse.quote(args.admin_secret) if args.admin_secret else "")
            driver.get(url)
            seen = 0
            deadline = time.time() + 900
            while time.time() < deadline:
                seen = pump(driver, seen, verdicts)
                if driver.execute_script("return window.hearthDone"):
                    break
                time.sleep(0.2)
            seen = pump(driver, seen, verdicts)
            if not driver.execute_script("return window.hearthDone"):
                verdicts.append({"d": "chromium", "s": "page", "verdict": "FAIL", "detail": "the page did not finish in 900 s"})
                emit(verdicts[-1])
        finally:
            driver.quit()
    wants_transport = not only or "long-poll-fallback" in only or "ws-url-after-failure" in only
    if wants_transport and not args.skip_transport:
        if args.hearthd:
            verdicts += transport_scenarios(args, files)
        else:
            for name in ("long-poll-fallback", "ws-url-after-failure"):
                verdicts.append({"d": "chromium", "s": name, "verdict": "SKIP", "detail": "needs --hearthd BINARY"})
                emit(verdicts[-1])
    files.shutdown()
    failed = sum(1 for v in verdicts if v["verdict"] == "FAIL")
    emit({"d": "chromium", "e": "done", "pass": sum(1 for v in verdicts if v["verdict"] == "PASS"),
          "fail": failed, "skip": sum(1 for v in verdicts if v["verdict"] == "SKIP")})
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
