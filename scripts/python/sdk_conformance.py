"""Runs Google's firebase-admin (unmodified, from PyPI) against hearthd and checks every call the
SDK's Realtime Database module makes: set/get/update/push/delete, shallow reads, ETags and
conditional writes, transactions, ordered and limited queries, the rules endpoint, and errors.
Exits 0 and prints "ok" when everything behaved as the SDK expects.

Usage: sdk_conformance.py HOST:PORT
"""
import os
import sys

os.environ["FIREBASE_DATABASE_EMULATOR_HOST"] = sys.argv[1]
import firebase_admin  # noqa: E402
from firebase_admin import db, exceptions  # noqa: E402

firebase_admin.initialize_app(options={"databaseURL": "https://demo.firebaseio.com"})
root = db.reference("/conformance")


def check(condition, what):
    if not condition:
        print(f"FAILED: {what}", flush=True)
        sys.exit(1)


root.delete()
check(root.get() is None, "get of nothing is None")

dinos = root.child("dinosaurs")
dinos.set({
    "bruhathkayosaurus": {"height": 25, "order": "sauropoda"},
    "lambeosaurus": {"height": 2.1, "order": "ornithopoda"},
    "linhenykus": {"height": 0.6, "order": "theropoda"},
    "pterodactyl": {"height": 0.6, "order": "pterosauria"},
    "stegosaurus": {"height": 4, "order": "stegosauria"},
})
check(dinos.child("stegosaurus/height").get() == 4, "set then get")
check(set(dinos.get(shallow=True).keys()) == {"bruhathkayosaurus", "lambeosaurus", "linhenykus",
                                              "pterodactyl", "stegosaurus"}, "shallow get")

tallest = dinos.order_by_child("height").limit_to_last(2).get()
check(list(tallest.keys()) == ["stegosaurus", "bruhathkayosaurus"], f"order_by_child + limit_to_last: {tallest}")
small = dinos.order_by_child("height").end_at(1).get()
check(list(small.keys()) == ["linhenykus", "pterodactyl"], f"end_at: {small}")
by_key = dinos.order_by_key().start_at("p").limit_to_first(1).get()
check(list(by_key.keys()) == ["pterodactyl"], f"order_by_key: {by_key}")
heights = root.child("heights")
heights.set({"a": 3, "b": 1, "c": 2})
check(list(heights.order_by_value().limit_to_first(2).get().keys()) == ["b", "c"], "order_by_value")
check(dinos.order_by_child("height").equal_to(0.6).get().keys() == {"linhenykus", "pterodactyl"}, "equal_to")

dinos.child("stegosaurus").update({"height": 5, "diet/plants": True})
check(dinos.child("stegosaurus").get() == {"height": 5, "order": "stegosauria", "diet": {"plants": True}}, "update")

pushed = root.child("log").push({"text": "hello"})
check(len(pushed.key) == 20, "push id")
check(pushed.get() == {"text": "hello"}, "pushed value")
empty_push = root.child("log").push()
check(empty_push.get() == "", "push with the default empty string")

value, etag = dinos.child("linhenykus/height").get(etag=True)
check(value == 0.6 and etag, "get with etag")
changed, same_value, same_etag = dinos.child("linhenykus/height").get_if_changed(etag)
check(not changed, "get_if_changed with the current etag")
ok, current, _ = dinos.child("linhenykus/height").set_if_unchanged("wrong-etag", 1)
check(not ok and current == 0.6, "set_if_unchanged with a stale etag")
ok, current, new_etag = dinos.child("linhenykus/height").set_if_unchanged(etag, 0.7)
check(ok and current == 0.7 and new_etag != etag, "set_if_unchanged with the current etag")

counter = root.child("counter")
result = counter.transaction(lambda current: (current or 0) + 1)
check(result == 1, f"transaction on nothing: {result}")
result = counter.transaction(lambda current: (current or 0) + 41)
check(result == 42, "transaction")

try:
    root.child("x").set({"bad$key": 1})
    check(False, "an invalid key is refused")
except exceptions.InvalidArgumentError:
    pass

dinos.child("stegosaurus").delete()
check(dinos.child("stegosaurus").get() is None, "delete")
root.delete()
print("ok", flush=True)
