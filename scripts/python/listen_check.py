"""firebase-admin's listen() against hearthd: prints each event the SDK delivers as one JSON line
(event_type, path, data) until it has seen COUNT of them, then closes the listener.

Usage: listen_check.py HOST:PORT PATH COUNT
"""
import json
import os
import queue
import sys

os.environ["FIREBASE_DATABASE_EMULATOR_HOST"] = sys.argv[1]
import firebase_admin  # noqa: E402
from firebase_admin import db  # noqa: E402

firebase_admin.initialize_app(options={"databaseURL": "https://demo.firebaseio.com"})
events = queue.Queue()
registration = db.reference(sys.argv[2]).listen(
    lambda event: events.put({"event_type": event.event_type, "path": event.path, "data": event.data}))
for _ in range(int(sys.argv[3])):
    print(json.dumps(events.get(timeout=30), sort_keys=True), flush=True)
registration.close()
