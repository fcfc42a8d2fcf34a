"""Runs README's JavaScript EventSource snippet in headless Chromium (Selenium, Debian's
chromium and chromium-driver) against a running hearthd, with `console.log` captured. Once the
stream has delivered its first event, writes to /people over HTTP (a PUT below the location, then
a PATCH of it), and prints what the page logged as JSON lines once it has seen three events.

Usage: eventsource_check.py SNIPPET_FILE HTTP_PORT
"""
import json
import os
import sys
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

snippet_file, port = sys.argv[1], int(sys.argv[2])
count = 3


def write(method, path, body):
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=body.encode(), method=method)
    urllib.request.urlopen(request).read()

snippet = open(snippet_file).read()
options = webdriver.ChromeOptions()
options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
    options.add_argument(argument)
driver = webdriver.Chrome(service=Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")), options=options)
try:
    # A page of the server itself; the snippet's URL is absolute, and CORS would allow any origin.
    driver.get(f"http://127.0.0.1:{port}/.well-known/hearth/health")
    driver.execute_script(
        "window.logged = []; console.log = (...args) => window.logged.push(args);" + snippet)
    deadline = time.time() + 20
    ready = False
    while time.time() < deadline:
        logged = driver.execute_script("return window.logged")
        if logged and not ready:
            ready = True
            write("PUT", "/people/grace.json", '{"name":"Grace"}')
            write("PATCH", "/people.json", '{"ada/born":1816}')
        if len(logged) >= count:
            for entry in logged:
                print(json.dumps(entry), flush=True)
            sys.exit(0)
        time.sleep(0.05)
    print(f"timed out with {driver.execute_script('return window.logged')}", flush=True)
    sys.exit(1)
finally:
    driver.quit()
