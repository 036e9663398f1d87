"""What every benchmark shares: the real server, load generators, and the result line.

`Server` runs `gitstore serve` (gunicorn, gthread workers, the documented defaults) on a store
with the bench-only baseline endpoint switched on (`GITSTORE_BENCH_BASELINE=1`). Load comes from
other processes on loopback: Debian's `wrk` when it is installed (light on CPU, which matters on
a 2-core machine shared with the server), else `pyload`, a multi-process keep-alive client of
our own, which needs nothing installed and is what the smoke runs use.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import re
import selectors
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import make_store  # bench/ is not a package: scripts and this module import their neighbours

PROJECT = Path(__file__).resolve().parents[1]
BASELINE_ENV = "GITSTORE_BENCH_BASELINE"
LOOKUP = "/api/v1/config/environments/1/nodes/{node}/resources/astute/values?effective"


def baseline_path(size: int) -> str:
    return f"/bench/baseline/{size}"


# -- options and scratch space ---------------------------------------------------------------
def options(doc: str, *, timed: bool = False) -> argparse.ArgumentParser:
    """The command line every bench shares; `timed` adds the options of the rate benches."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--workers", type=int, help="gunicorn workers (default: serve's)")
    parser.add_argument(
        "--worker-class", choices=("gevent", "gthread"), help="gunicorn worker class (serve's)"
    )
    parser.add_argument("--smoke", action="store_true", help="tiny and quick, for CI")
    parser.add_argument(
        "--workdir", type=Path, help="folder for the stores it builds (default: the temp folder)"
    )
    if timed:
        parser.add_argument("--seconds", type=float, default=10.0, help="length of a round")
        parser.add_argument("--rounds", type=int, default=3, help="rounds (the median counts)")
        parser.add_argument("--no-wrk", action="store_true", help="use the Python client")
    return parser


@contextmanager
def scratch(prefix: str, workdir: Path | None) -> Iterator[Path]:
    """A fresh folder under `workdir` (default: the temp folder), removed afterwards."""
    if workdir is not None:
        workdir.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=workdir))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def store_for(
    args: argparse.Namespace,
    scratch_folder: Path,
    sizes: tuple[int, int],
    smoke_sizes: tuple[int, int],
) -> Path:
    """`--root` when given; else a new store in `scratch_folder` of (nodes, commits) `sizes`,
    or `smoke_sizes` under `--smoke`, with 100 facts per node (`make_store.py`)."""
    if args.root is not None:
        return args.root
    root = scratch_folder / "store"
    nodes, commits = smoke_sizes if args.smoke else sizes
    make_store.build(root, nodes, commits, keys=100)
    return root


def file_creation_us(folder: Path, files: int = 100) -> float:
    """Median microseconds to create a small file in a new folder inside `folder`.

    On ext4 without a journal (this machine's disk), every file created in a block group
    where many files were deleted in the last minutes first walks past those inodes: a
    creation then costs 1 ms instead of 30 us, and a write makes seven of them (see
    docs/performance.md). The writes bench reports this so a slow disk is not read as a
    slow store.
    """
    probe = Path(tempfile.mkdtemp(prefix="probe-", dir=folder))
    took = []
    try:
        for number in range(files):
            started = time.perf_counter()
            fd = os.open(probe / f"f{number}", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            os.write(fd, b"x" * 64)
            os.close(fd)
            took.append(time.perf_counter() - started)
    finally:
        shutil.rmtree(probe, ignore_errors=True)
    return statistics.median(took) * 1e6


# -- the server ------------------------------------------------------------------------------
class Server:
    """`gitstore serve` on `root` in a process group of its own; a context manager."""

    def __init__(
        self,
        root: Path,
        *,
        workers: int | None = None,
        threads: int | None = None,
        worker_class: str | None = None,
        code: Path | None = None,
        extra: tuple[str, ...] = (),
    ):
        self.root = root
        self.code = code  # another checkout of gitstore to serve (bench/limit.py --before)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = Path(tempfile.mkstemp(prefix="gitstore-bench-", suffix=".log")[1])
        self._args = [
            str(Path(sys.executable).with_name("gitstore")),
            "serve",
            "--root",
            str(root),
            "--port",
            str(self.port),
        ]
        if workers:
            self._args += ["--workers", str(workers)]
        if threads:
            self._args += ["--threads", str(threads)]
        if worker_class:
            self._args += ["--worker-class", worker_class]
        self._args += list(extra)  # e.g. --no-maintenance (bench/longevity.py)
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> Server:
        env = {**os.environ, BASELINE_ENV: "1", "GITSTORE_ROOT": str(self.root)}
        if self.code is not None:
            env["PYTHONPATH"] = str(self.code)
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                self._args, env=env, stdout=log, stderr=log, start_new_session=True
            )
        self._wait_ready()
        return self

    def __exit__(self, *exc) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.log.unlink(missing_ok=True)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(self.url + "/healthz", timeout=5).close()  # open to all
                if len(self.workers()) >= self.expected_workers():
                    return
            except (urllib.error.URLError, OSError):
                if self.process.poll() is not None:
                    break
            time.sleep(0.1)
        raise SystemExit(f"gitstore serve did not start:\n{self.log.read_text()[-3000:]}")

    def expected_workers(self) -> int:
        index = self._args.index("--workers") if "--workers" in self._args else None
        return int(self._args[index + 1]) if index else 2 * len(os.sched_getaffinity(0))

    def workers(self) -> list[int]:
        """Pids of the gunicorn workers (children of the master)."""
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        try:
            return [int(pid) for pid in children.read_text().split()]
        except FileNotFoundError:
            return []

    def get(self, path: str) -> tuple[int, bytes, dict]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=30) as response:
                return response.status, response.read(), dict(response.headers)
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read(), dict(exc.headers)

    def warm(self, paths: list[str], rounds: int | None = None) -> int:
        """GET each path on enough connections that every worker has served it; its size."""
        size = 0
        for _ in range(rounds or 4 * self.expected_workers()):
            for path in paths:
                status, body, _ = self.get(path)
                if status != 200:
                    raise SystemExit(f"GET {path}: {status} {body[:300]!r}")
                size = len(body)
        return size


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time the processes have used so far."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- load ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Load:
    """What a load run measured."""

    rate: float  # requests per second
    p50_ms: float
    p99_ms: float
    requests: int
    errors: int
    tool: str
    answered: tuple[int, ...] = ()  # numbers of the requests answered 2xx (pyload_requests)


def has_wrk() -> bool:
    return shutil.which("wrk") is not None


def wrk(
    url: str, seconds: float, connections: int = 8, threads: int = 1, headers: dict | None = None
) -> Load:
    """`wrk` against one URL: rate and latency percentiles as it prints them."""
    header_args = [
        arg for name, value in (headers or {}).items() for arg in ("-H", f"{name}: {value}")
    ]
    # A slow answer on a busy machine is latency, not an error: wrk's default timeout is 2 s.
    out = subprocess.run(
        [
            "wrk",
            f"-t{threads}",
            f"-c{connections}",
            f"-d{seconds:g}s",
            "--timeout",
            "10s",
            "--latency",
            *header_args,
            url,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    total = int(re.search(r"(\d+) requests in", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket_errors = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), "
        r"timeout (\d+)",
        out,
    )
    failed = int(errors.group(1)) if errors else 0
    failed += sum(map(int, socket_errors.groups())) if socket_errors else 0
    return Load(rate, _wrk_ms(out, "50%"), _wrk_ms(out, "99%"), total, failed, "wrk")


ONCE_SCRIPT = Path(__file__).resolve().parent / "wrk_once.lua"


def wrk_once(base_url: str, paths: list[str], connections: int = 8, threads: int = 2) -> Load:
    """`wrk` requesting each of `paths` once (`wrk_once.lua`), stopped with SIGINT as soon as
    every thread has its share answered; the rate is over the script's own clock, from the
    first request sent to the last answer."""
    with tempfile.NamedTemporaryFile("w", suffix=".paths") as listed:
        listed.write("".join(f"{path}\n" for path in paths))
        listed.flush()
        bound = max(60, len(paths) // 20)  # wrk's own end, should the harness never stop it
        command = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{bound}s", "--timeout", "10s"]
        command += ["-s", str(ONCE_SCRIPT), base_url, "--", listed.name, str(threads)]
        with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
            out = _until_finished(process, threads)
    found = re.search(r"ONCE answered=(\d+) failed=(\d+) seconds=([\d.]+) p50=(\d+) p99=(\d+)", out)
    answered, failed, seconds, p50, p99 = found.groups()
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+)", out)
    errors = int(failed) + (sum(map(int, socket_errors.groups())) if socket_errors else 0)
    rate = int(answered) / float(seconds)
    return Load(rate, int(p50) / 1000, int(p99) / 1000, int(answered), errors, "wrk")


def _until_finished(process: subprocess.Popen, threads: int) -> str:
    """All of wrk's output, having interrupted it once `threads` lines said `finished`."""
    lines, finished = [], 0
    for line in process.stdout:
        lines.append(line)
        finished += line.strip() == "finished"
        if finished == threads:
            process.send_signal(signal.SIGINT)
            finished += 1  # interrupted once
    process.wait()
    return "".join(lines)


def _wrk_ms(out: str, percentile: str) -> float:
    value, unit = re.search(rf"^\s+{percentile}\s+([\d.]+)(us|ms|s)\s*$", out, re.M).groups()
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


class Gets:
    """Requests of a `pyload` run: GETs of `paths` in turn (request number n: path n)."""

    def __init__(self, host: str, paths: list[str], headers: dict | None = None) -> None:
        extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
        self.requests = [f"GET {p} HTTP/1.1\r\nHost: {host}\r\n{extra}\r\n".encode() for p in paths]

    def __call__(self, number: int) -> bytes:
        return self.requests[number % len(self.requests)]


def pyload(
    base_url: str,
    paths: list[str],
    seconds: float,
    processes: int = 2,
    connections: int = 4,
    total: int | None = None,
    headers: dict | None = None,
) -> Load:
    """`processes` x `connections` keep-alive clients cycling through `paths` for `seconds`
    (or until `total` requests have been answered), sending `headers` too."""
    host, port = base_url.removeprefix("http://").split(":")
    return pyload_requests(
        base_url,
        Gets(host, paths, headers),
        seconds,
        processes,
        connections,
        total,
        spacing=len(paths),
    )


def pyload_requests(
    base_url: str,
    requests,
    seconds: float,
    processes: int = 2,
    connections: int = 4,
    total: int | None = None,
    spacing: int = 1_000_000_000,
) -> Load:
    """Like `pyload`, with request number n being `requests(n)` (a picklable callable).

    Process k numbers its requests from `k * spacing // processes`, so with the default
    spacing every request of the run has a number of its own; `Load.answered` lists the
    numbers of those answered with a 2xx status.
    """
    host, port = base_url.removeprefix("http://").split(":")
    share = -(-total // processes) if total else None
    jobs = [
        (host, int(port), requests, seconds, connections, n * spacing // processes, share)
        for n in range(processes)
    ]
    started = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(processes, _stopped_by_sigterm) as pool:
        results = pool.map(_client, jobs)
    elapsed = seconds if total is None else time.perf_counter() - started
    latencies = sorted(lat for lats, _, _ in results for lat in lats)
    errors = sum(err for _, err, _ in results)
    answered = tuple(number for _, _, numbers in results for number in numbers)
    if not latencies:
        return Load(0.0, 0.0, 0.0, 0, errors, "pyload")
    pick = lambda q: latencies[min(int(q * len(latencies)), len(latencies) - 1)] * 1000  # noqa: E731
    return Load(
        len(latencies) / elapsed, pick(0.50), pick(0.99), len(latencies), errors, "pyload", answered
    )


def _stopped_by_sigterm() -> None:
    """A pool process ends at the pool's SIGTERM, whatever handler its bench installed: one
    that exits through Python (bench/longevity.py's) left a process waiting forever on the
    pool's queue lock, which its sibling had held when it ended, and the bench with it."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _client(job) -> tuple[list[float], int, list[int]]:
    """One process: `connections` sockets used in turn, each request sent and read whole."""
    host, port, requests, seconds, connections, index, share = job
    client = _Client((host, port), requests, index, seconds if share is None else math.inf, share)
    return client.run(connections)


class _Client:
    """The requests of one client process: sent in turn on its connections, each read whole."""

    def __init__(self, address, requests, index: int, seconds: float, share: int | None):
        self.address, self.requests, self.index, self.share = address, requests, index, share
        self.deadline = time.perf_counter() + seconds
        self.selector = selectors.DefaultSelector()
        self.state: dict = {}  # socket -> [sent at, bytes read, request number]
        self.socks: list[socket.socket] = []
        self.sent = 0
        self.latencies: list[float] = []
        self.answered: list[int] = []
        self.errors = 0

    def run(self, connections: int) -> tuple[list[float], int, list[int]]:
        for _ in range(connections):
            self._start()
        while self.state:
            for key, _ in self.selector.select(timeout=10):
                self._read(key.fileobj)
        for sock in self.socks:
            sock.close()
        return self.latencies, self.errors, self.answered

    def _more(self) -> bool:
        return time.perf_counter() < self.deadline and (
            self.share is None or self.sent < self.share
        )

    def _start(self) -> None:
        sock = socket.create_connection(self.address)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.socks.append(sock)
        self.selector.register(sock, selectors.EVENT_READ)
        self._send(sock)

    def _send(self, sock) -> None:
        sock.sendall(self.requests(self.index))
        self.state[sock] = [time.perf_counter(), b"", self.index]
        self.index += 1
        self.sent += 1

    def _read(self, sock) -> None:
        started, buffer, number = self.state[sock]
        data = _receive(sock)
        if not data:  # closed (a worker restarting after `max_requests`): the request is an
            self.errors += 1  # error, and the rest go on a new connection
            self._stop(sock)
            if self._more():
                self._start()
            return
        buffer += data
        status = _complete(buffer)
        if status is None:
            self.state[sock][1] = buffer
            return
        self.latencies.append(time.perf_counter() - started)
        if status >= 400:
            self.errors += 1
        elif status < 300:
            self.answered.append(number)
        if self._more():
            self._send(sock)
        else:
            self._stop(sock)  # done: a server closing it now is no answer

    def _stop(self, sock) -> None:
        self.selector.unregister(sock)
        del self.state[sock]


def _receive(sock: socket.socket) -> bytes:
    """What arrived on `sock`; b"" once closed, or reset (a worker restarting after gunicorn's
    `max_requests` resets its keep-alive connections)."""
    try:
        return sock.recv(1 << 20)
    except ConnectionResetError:
        return b""


def _complete(buffer: bytes) -> int | None:
    """The status of a whole response in `buffer`, None while it is incomplete."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = buffer[:end].decode("latin-1")
    match = re.search(r"\r\ncontent-length:\s*(\d+)", head, re.I)
    length = int(match.group(1)) if match else 0
    if len(buffer) < end + 4 + length:
        return None
    return int(head.split(" ", 2)[1])


def measure(
    server: Server, path: str, seconds: float, *, use_wrk: bool, connections: int = 8
) -> Load:
    """Load `path` from `connections` keep-alive connections for `seconds`."""
    if use_wrk:
        return wrk(server.url + path, seconds, connections=connections)
    processes = 2 if connections >= 2 else 1
    return pyload(
        server.url,
        [path],
        seconds,
        processes=processes,
        connections=max(connections // processes, 1),
    )


# -- output ----------------------------------------------------------------------------------
def report(name: str, ratio: float, target: str, ok: bool, details: str) -> None:
    """The one line each benchmark ends with (the smoke test looks for `RATIO <name>`)."""
    verdict = "met" if ok else "MISSED"
    print(f"RATIO {name} {ratio:.3f} (target {target}: {verdict}) {details}", flush=True)


def cpu_ticks() -> tuple[int, int]:
    """(all, stolen) CPU ticks of the machine so far (/proc/stat). Between two readings, the
    stolen share is the CPU time the hypervisor gave to other machines on the same host."""
    fields = [int(field) for field in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(fields[:8]), fields[7]


def stolen_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    return (after[1] - before[1]) / max(after[0] - before[0], 1)


def machine_load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f}/{five:.1f} on {os.cpu_count()} CPUs"
