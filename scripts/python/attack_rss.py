"""One memory attack against a running hearthd, with its resident memory sampled from /proc while
it lasts: prints one JSON line with the growth at the peak and what the attacker saw.

Usage: attack_rss.py SCENARIO PID TCP_PORT HTTP_PORT [TOKEN]
Scenarios (each bounded in time, and stopped early once the server passes --ceiling-mb):
  http-reads   a 10 MB value, then 200 pipelined GETs of it on one connection that never reads
  tcp-reads    the same over the line protocol: 200 pipelined `get` lines, never read
  bodies       100 connections each declaring a 16 MiB body without a credential and sending it
  streams      40 event streams that never read while a writer changes a 64 KB value
"""
import json
import socket
import sys
import threading
import time
import urllib.request

scenario, pid, tcp_port, http_port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
token = sys.argv[5] if len(sys.argv) > 5 else ""
ceiling_mb = 4000


def rss_mb():
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return 0


def sample(seconds, until=lambda: False):
    """The peak RSS over `seconds` (sampled every 50 ms), stopping early at the ceiling."""
    peak = rss_mb()
    deadline = time.time() + seconds
    while time.time() < deadline and not until():
        peak = max(peak, rss_mb())
        if peak > ceiling_mb:
            break
        time.sleep(0.05)
    return peak


def put(path, body):
    query = f"?auth={token}" if token else ""
    request = urllib.request.Request(f"http://127.0.0.1:{http_port}{path}.json{query}", data=body, method="PUT")
    urllib.request.urlopen(request, timeout=60).read()


def small_socket(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    return s


base = rss_mb()
result = {"scenario": scenario}
if scenario in ("http-reads", "tcp-reads"):
    put("/big", b'"' + b"x" * 10_000_000 + b'"')
    base = rss_mb()
    if scenario == "http-reads":
        s = small_socket(http_port)
        s.sendall(b"GET /big.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" * 200)
    else:
        s = small_socket(tcp_port)
        s.sendall(b"".join(b'{"id":%d,"op":"get","path":"/big"}\n' % i for i in range(200)))
    peak = sample(8)
    s.close()
elif scenario == "bodies":
    answered = []

    def attack():
        s = socket.create_connection(("127.0.0.1", http_port))
        s.sendall(b"PUT /x.json HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 16777216\r\n\r\n")
        s.settimeout(0.01)
        chunk = b"a" * 65536
        sent, start = 0, time.time()
        while sent < 16_777_000 and time.time() - start < 8:
            try:
                if s.recv(64):
                    answered.append(time.time() - start)
                    break
            except socket.timeout:
                pass
            except OSError:
                break
            try:
                s.send(chunk)
                sent += len(chunk)
            except OSError:
                break
        time.sleep(1)
        s.close()

    threads = [threading.Thread(target=attack) for _ in range(100)]
    for thread in threads:
        thread.start()
    peak = sample(10, until=lambda: not any(t.is_alive() for t in threads))
    for thread in threads:
        thread.join()
    result["answered"] = len(answered)
    result["slowestAnswerSeconds"] = round(max(answered), 3) if answered else None
elif scenario == "streams":
    streams = []
    for _ in range(40):
        s = small_socket(http_port)
        s.sendall(b"GET /feed.json HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
        streams.append(s)
    writer = socket.create_connection(("127.0.0.1", tcp_port))
    writer.settimeout(10)
    writer.recv(65536)  # hello
    peak, n, start = base, 0, time.time()
    while time.time() - start < 10 and peak <= ceiling_mb:
        value = "%08d" % n + "y" * 65000
        writer.sendall(b'{"op":"set","path":"/feed/x","value":"%s"}\n' % value.encode())
        n += 1
        if n % 10 == 0:
            peak = max(peak, rss_mb())
        time.sleep(0.005)
    result["writes"] = n
    for s in streams:
        s.close()
else:
    sys.exit(f"unknown scenario {scenario}")
result.update({"baseMB": base, "peakMB": peak, "growthMB": peak - base, "stoppedAtCeiling": peak > ceiling_mb})
print(json.dumps(result), flush=True)
