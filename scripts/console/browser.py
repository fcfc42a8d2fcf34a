"""What the console checks share: a headless Chromium through chromedriver, a wait for a
condition on the page, and a plain assertion.

CHROMIUM and CHROMEDRIVER name the binaries (default: Debian's, in /usr/bin).
"""

import os

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def start_chromium(extra_arguments=(), prefs=None):
    """A headless Chromium with a 1280x800 window."""
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1280,800", *extra_arguments]:
        options.add_argument(argument)
    if prefs:
        options.add_experimental_option("prefs", prefs)
    service = Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
    return webdriver.Chrome(service=service, options=options)


def wait_until(driver, condition, timeout=10, what="condition", page=None):
    """Polls `condition` until it is true. Parts of the console re-render every second: an element
    found just before a re-render is stale by the time it is read, so such a read is tried again.
    On a timeout the error names `what`, and the text `page()` returns when given."""
    try:
        return WebDriverWait(
            driver, timeout, poll_frequency=0.02, ignored_exceptions=(StaleElementReferenceException,)
        ).until(lambda d: condition())
    except TimeoutException:
        raise AssertionError("timed out waiting for " + what + ("; the page says: " + page() if page else ""))
