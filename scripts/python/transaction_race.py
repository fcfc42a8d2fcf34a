"""Several firebase-admin clients increment one counter with db.reference().transaction() at
once; the test adds TCP clients doing the same and checks the exact total.

Usage: transaction_race.py HOST:PORT PATH CLIENTS INCREMENTS
Prints the number of committed increments.
"""
import os
import sys
import threading

os.environ["FIREBASE_DATABASE_EMULATOR_HOST"] = sys.argv[1]
import firebase_admin  # noqa: E402
from firebase_admin import db  # noqa: E402

path, clients, increments = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
done = []
lock = threading.Lock()


def worker(index):
    app = firebase_admin.initialize_app(
        options={"databaseURL": "https://demo.firebaseio.com"}, name=f"racer-{index}")
    ref = db.reference(path, app=app)
    for _ in range(increments):
        ref.transaction(lambda current: (current or 0) + 1)
        with lock:
            done.append(1)


threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(len(done))
