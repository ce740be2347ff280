#!/usr/bin/env python3
"""Python peer for bench/peers: concurrent.futures.ProcessPoolExecutor.

Speaks the peers worker protocol: one JSON command per line on stdin, one
JSON reply per line on stdout (see worker.go). Tasks are plain Python
functions run in the pool's worker processes, which are reused from task to
task (no sandbox, no fresh instance):

  noop   returns None                 (the analogue of noop.wasm)
  hello  returns its argument .upper() (the analogue of the Go hello guest)

Per-task cost is pool.submit(fn, arg).result() on an idle pool of 2
processes. Stop latency: a pool of 2 whose worker spins in `while True`;
the escalation is future.cancel() (cooperative: fails, the task is running),
then terminate() (SIGTERM) on every pool process, then kill() (SIGKILL) if
the future has not failed within 1 s; the time is from the cancel() until
future.result() raises BrokenProcessPool. Terminating a worker breaks the
whole pool, so `recover_ns` is the time to build a new pool and get a first
result from it.
"""
import concurrent.futures as cf
import json
import multiprocessing as mp
import os
import sys
import threading
import time

INPUT = "hello, stint: the quick brown fox jumps over the lazy dog\n"
WANT = INPUT.upper()
PAR = 2


def noop(_):
    return None


def hello(s):
    return s.upper()


_started = None


def _init(ev):
    global _started
    _started = ev


def spin():
    _started.set()
    while True:
        pass


def mem_status(pid):
    rss = hwm = 0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
    except OSError:
        pass
    return rss, hwm


class Peer:
    def __init__(self):
        self.pool = cf.ProcessPoolExecutor(max_workers=PAR)
        # Start both workers now (outside every timed loop).
        list(self.pool.map(noop, range(4 * PAR)))

    def pids(self):
        return [os.getpid()] + [p.pid for p in self.pool._processes.values()]

    def task(self, guest):
        if guest == "hello":
            r = self.pool.submit(hello, INPUT).result()
            if r != WANT:
                raise RuntimeError(f"hello: got {r!r}")
        else:
            if self.pool.submit(noop, None).result() is not None:
                raise RuntimeError("noop: unexpected result")

    def lat(self, guest, n):
        ns = []
        for _ in range(n):
            t0 = time.perf_counter_ns()
            self.task(guest)
            ns.append(time.perf_counter_ns() - t0)
        return {"ns": ns}

    def tput(self, guest, ms, par):
        end = time.perf_counter() + ms / 1000
        counts = [0] * par
        errs = []

        def loop(i):
            try:
                while time.perf_counter() < end:
                    self.task(guest)
                    counts[i] += 1
            except Exception as e:  # noqa: BLE001
                errs.append(repr(e))

        t0 = time.perf_counter_ns()
        ts = [threading.Thread(target=loop, args=(i,)) for i in range(par)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        r = {"tasks": sum(counts), "elapsed_ns": time.perf_counter_ns() - t0}
        if errs:
            r["error"] = errs[0]
        return r

    def stop(self, n):
        ns, rec, killed = [], [], 0
        for _ in range(n):
            ev = mp.Event()
            pool = cf.ProcessPoolExecutor(max_workers=PAR, initializer=_init, initargs=(ev,))
            fut = pool.submit(spin)
            if not ev.wait(10):
                raise RuntimeError("spinning task did not start")
            t0 = time.perf_counter_ns()
            if fut.cancel():
                raise RuntimeError("cancel() of a running task succeeded?")
            procs = list(pool._processes.values())
            for p in procs:
                p.terminate()
            try:
                fut.result(timeout=1)
                raise RuntimeError("spinning task returned")
            except cf.process.BrokenProcessPool:
                pass
            except cf.TimeoutError:
                killed += 1
                for p in procs:
                    p.kill()
                try:
                    fut.result(timeout=10)
                except cf.process.BrokenProcessPool:
                    pass
            ns.append(time.perf_counter_ns() - t0)
            pool.shutdown(wait=True)
            # Recovery: a new pool and its first result.
            t1 = time.perf_counter_ns()
            p2 = cf.ProcessPoolExecutor(max_workers=PAR)
            p2.submit(noop, None).result()
            rec.append(time.perf_counter_ns() - t1)
            p2.shutdown(wait=True)
        r = {"ns": ns, "recover_ns": rec}
        r["note"] = f"terminate() sufficed {n - killed}/{n}, kill() needed {killed}/{n}"
        return r

    def mem(self):
        rss = hwm = 0
        for pid in self.pids():
            a, b = mem_status(pid)
            rss += a
            hwm += b
        return {"rss_kb": rss, "hwm_kb": hwm}

    def reset_hwm(self):
        for pid in self.pids():
            with open(f"/proc/{pid}/clear_refs", "w") as f:
                f.write("5")
        return {}


def main():
    t0 = time.perf_counter()
    peer = Peer()
    out = sys.stdout
    ready = {"ready": True, "setup_ms": (time.perf_counter() - t0) * 1000}
    ready.update(peer.mem())
    ready["info"] = (f"python {sys.version.split()[0]}, ProcessPoolExecutor(max_workers={PAR}), "
                     f"start method {mp.get_start_method()}, submit().result() per task")
    out.write(json.dumps(ready) + "\n")
    out.flush()
    for line in sys.stdin:
        req = json.loads(line)
        op = req.get("op")
        try:
            if op == "quit":
                peer.pool.shutdown(wait=True)
                out.write("{}\n")
                out.flush()
                return
            elif op == "lat":
                r = peer.lat(req["guest"], req["n"])
            elif op == "tput":
                r = peer.tput(req["guest"], req["ms"], req.get("par", PAR))
            elif op == "stop":
                r = peer.stop(req["n"])
            elif op == "mem":
                r = peer.mem()
            elif op == "reset_hwm":
                r = peer.reset_hwm()
            else:
                r = {"error": f"unknown op {op}"}
        except Exception as e:  # noqa: BLE001
            r = {"error": repr(e)}
        out.write(json.dumps(r) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
