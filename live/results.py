"""The task sets, their checkers, and the results store behind live/RESULTS.md and README's table.

Two sets of tasks in one format (a folder per task: prompt.txt, workspace/, check.py, solve.sh):
`dev` (live/tasks/, what turn's behaviour may be tuned on) and `heldout` (live/heldout/, for the
report only: see live/README.md for the rule).

Every finished run of an agent on a task is stored as raw JSON under live/results/, one file per
(set, window, agent, model, commit): live/results/<set>/<agent>--<model>--c<ctx>--<commit>.json,
holding the run's settings and one row per task. A later run of the same task under the same key
replaces its row; anything else accumulates, so the tables can be filled piecemeal by separate
invocations (`live/suite`, `live/peers`). The tables are rendered from all stored files: for each
(set, window, agent, model) the newest file is shown, with its date, commit and versions.
"""
import datetime
import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import livelib  # noqa: E402

LIVE = os.path.join(livelib.ROOT, "live")
SETS = {"dev": os.path.join(LIVE, "tasks"), "heldout": os.path.join(LIVE, "heldout")}
SET_TITLES = {"dev": "development set (live/tasks/, turn is tuned on it)",
              "heldout": "held-out set (live/heldout/, never tuned on)"}
STORE = os.path.join(LIVE, "results")
RESULTS_MD = os.path.join(LIVE, "RESULTS.md")
README = os.path.join(livelib.ROOT, "README.md")
# The comparison every set is run for (README's grid): a cell with no results shows as "not run".
GRID = {"ctx": [8192, 4096], "agents": ["turn", "aider-whole", "mini-tool", "mini-text"], "model": "1.5b"}
AGENT_ORDER = ["turn", "turn-text", "turn-native", "aider-whole", "mini-tool", "mini-text"]
AGENT_TITLES = {
    "turn": "turn",
    "turn-text": "turn (`--tool-protocol text`)",
    "turn-native": "turn (`--tool-protocol native`)",
    "aider-whole": "aider (whole)",
    "mini-tool": "mini-swe-agent (tool calls)",
    "mini-text": "mini-swe-agent (text)",
}

# Kinds of task a peer cannot do by design: the table says so next to its result (the run is
# still made and counted). A task declares its kind in an optional file `needs` (one word a line).
BY_DESIGN = {
    ("aider-whole", "command"): "needs a command's output; aider runs no commands unless told (`--yes-always` declines them)",
}


# ---------------------------------------------------------------------------------------------
# tasks


def task_dir(set_name, name):
    return os.path.join(SETS[set_name], name)


def task_names(set_name):
    root = SETS[set_name]
    return sorted(d for d in os.listdir(root) if os.path.exists(os.path.join(root, d, "check.py")))


def prompt(set_name, name):
    with open(os.path.join(task_dir(set_name, name), "prompt.txt")) as f:
        return f.read().strip()


def needs(set_name, name):
    try:
        with open(os.path.join(task_dir(set_name, name), "needs")) as f:
            return {line.strip() for line in f if line.strip()}
    except FileNotFoundError:
        return set()


def by_design(agent, set_name, name):
    return [BY_DESIGN[(agent, kind)] for kind in sorted(needs(set_name, name)) if (agent, kind) in BY_DESIGN]


def fresh_copy(set_name, name, parent):
    """A fresh copy of the task's workspace under parent (made if missing)."""
    ws = os.path.join(parent, name)
    os.makedirs(parent, exist_ok=True)
    shutil.copytree(os.path.join(task_dir(set_name, name), "workspace"), ws)
    return ws


def run_check(set_name, name, ws, answer):
    """(passed, message) of the task's checker on ws, given the final answer text."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
        f.write(answer)
        f.flush()
        try:
            proc = subprocess.run([sys.executable, os.path.join(task_dir(set_name, name), "check.py"), ws, f.name,
                                   os.path.join(task_dir(set_name, name), "workspace")],
                                  capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return False, "the checker timed out"
    message = (proc.stdout + proc.stderr).replace(ws + "/", "").strip().splitlines()
    return proc.returncode == 0, (message[-1] if message else f"exit {proc.returncode}")[:300]


def check_checkers(set_names):
    """Every checker fails on the untouched workspace and passes on the reference solution."""
    bad = 0
    with tempfile.TemporaryDirectory(prefix="turn-live-checkers-") as scratch:
        for set_name in set_names:
            for name in task_names(set_name):
                label = f"{set_name}/{name}"
                untouched = fresh_copy(set_name, name, os.path.join(scratch, set_name, "untouched"))
                passed, why = run_check(set_name, name, untouched, "")
                if passed:
                    print(f"FAIL     checker {label}: passes on the untouched workspace")
                    bad += 1
                    continue
                solved = fresh_copy(set_name, name, os.path.join(scratch, set_name, "solved"))
                proc = subprocess.run(["sh", os.path.join(task_dir(set_name, name), "solve.sh")], cwd=solved,
                                      capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
                passed, why_solved = run_check(set_name, name, solved, proc.stdout)
                if proc.returncode != 0 or not passed:
                    print(f"FAIL     checker {label}: the reference solution does not pass: {why_solved} "
                          f"{proc.stderr[-200:]}")
                    bad += 1
                    continue
                print(f"PASS     checker {label}: fails untouched ({why}), passes solved")
    return bad


# ---------------------------------------------------------------------------------------------
# what a run is made on


def machine():
    cpu = platform.processor() or "x86-64"
    with open("/proc/cpuinfo") as f:
        found = re.search(r"model name\s*:\s*(.*)", f.read())
    if found:
        cpu = found.group(1).strip()
    return f"{cpu}, {os.cpu_count()} cores, Linux {platform.release()}"


def repo_commit():
    out = subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], cwd=livelib.ROOT, capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def set_commit(set_name):
    """The last commit that changed a task set (what a peer's results depend on here)."""
    out = subprocess.run(["git", "log", "-1", "--format=%h", "--abbrev=7", "--", os.path.relpath(SETS[set_name], livelib.ROOT)],
                         cwd=livelib.ROOT, capture_output=True, text=True)
    return out.stdout.strip() or repo_commit()


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def speeds(chats):
    """(prompt, generation) tokens a second over the requests, from llama-server's timings: how
    fast the machine was during the run (a loaded machine shows here, and in the wall time)."""
    t = [x.timings for x in chats if x.timings]
    prompt_ms, gen_ms = sum(x.get("prompt_ms", 0) for x in t), sum(x.get("predicted_ms", 0) for x in t)
    prompt_n, gen_n = sum(x.get("prompt_n", 0) for x in t), sum(x.get("predicted_n", 0) for x in t)
    return (round(1000 * prompt_n / prompt_ms, 1) if prompt_ms else None,
            round(1000 * gen_n / gen_ms, 1) if gen_ms else None)


# ---------------------------------------------------------------------------------------------
# the store


def sampled(meta):
    """A run at a temperature above 0: one of several runs of a task, told apart by their seeds."""
    try:
        return float(meta.get("temperature") or 0) > 0
    except ValueError:
        return False


def seeds(argv_value, temperature):
    """The seeds of `--seeds 1,2,3` (or `--runs N`: 1..N), one run of each task per seed. Runs at
    temperature 0 repeat each other, so more than one needs LIVE_TEMPERATURE above 0."""
    kind, value = argv_value
    try:
        found = list(range(1, int(value) + 1)) if kind == "--runs" else [int(x) for x in value.split(",") if x]
    except ValueError:
        found = []
    if not found or any(x < 0 for x in found) or len(set(found)) != len(found):
        raise livelib.Failure(f"{kind} takes {'a count of runs, 1 or more' if kind == '--runs' else 'distinct seeds, like 1,2,3'}; "
                              f"got {value!r}")
    if not sampled({"temperature": temperature}):
        if len(found) > 1 or kind == "--seeds":
            raise livelib.Failure(f"{kind} {value}: at temperature {temperature} every run repeats the first; "
                                  "set LIVE_TEMPERATURE above 0 (e.g. 0.5) for runs that differ by seed")
        return [None]
    return found


def run_label(set_name, ctx, seed):
    """How a run's files are named (workspace, transcripts, server log): `dev-c8192`, and
    `dev-c8192-s2` for a repeated run with seed 2."""
    return f"{set_name}-c{ctx}" + (f"-s{seed}" if seed is not None else "")


def store_path(meta):
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", str(meta["commit"]))
    temp = f"--t{meta['temperature']}" if sampled(meta) else ""
    return os.path.join(STORE, meta["set"], f"{meta['agent']}--{meta['model']}--c{meta['ctx']}--{safe}{temp}.json")


def store(meta, row):
    """Adds (or replaces) one task's row in the file of meta's key; meta's settings are updated.
    A sampled run's row is kept per task and seed (`NAME#SEED`), so runs with other seeds add up."""
    file = store_path(meta)
    os.makedirs(os.path.dirname(file), exist_ok=True)
    try:
        with open(file) as f:
            data = json.load(f)
    except (FileNotFoundError, ValueError):
        data = {"rows": {}}
    data["meta"] = dict(meta, updated=now())
    data["rows"][f"{row['task']}#{row['seed']}" if sampled(meta) else row["task"]] = row
    livelib.atomic_write(file, json.dumps(data, indent=1, sort_keys=True) + "\n")


def load_all():
    found = []
    for file in sorted(glob.glob(os.path.join(STORE, "*", "*.json"))):
        with open(file) as f:
            try:
                data = json.load(f)
            except ValueError:
                continue
        if isinstance(data, dict) and "meta" in data and "rows" in data:
            data["file"] = os.path.relpath(file, livelib.ROOT)
            found.append(data)
    return found


def newest(found, samples=False):
    """Per (set, ctx, agent, model): the most recently updated file of runs at temperature 0; with
    samples, of runs at a temperature above 0, per (set, ctx, agent, model, temperature)."""
    best = {}
    for data in found:
        m = data["meta"]
        if sampled(m) != samples:
            continue
        key = (m["set"], int(m["ctx"]), m["agent"], m["model"]) + ((str(m["temperature"]),) if samples else ())
        if key not in best or m.get("updated", "") > best[key]["meta"].get("updated", ""):
            best[key] = data
    return best


# ---------------------------------------------------------------------------------------------
# rendering


def pct(part, whole):
    return f"{100 * part / whole:.0f}%" if whole else "-"


def totals(rows):
    rows = list(rows)
    return {
        "passed": sum(r["passed"] for r in rows), "done": len(rows),
        "requests": sum(r.get("requests", 0) for r in rows),
        "processed": sum(r.get("processed", 0) for r in rows), "reused": sum(r.get("reused", 0) for r in rows),
        "seconds": sum(r.get("seconds", 0) for r in rows),
        "timeouts": sum(1 for r in rows if timed_out(r)),
        "prompt_tps": median([r.get("prompt_tps") for r in rows]),
        "first_prompt": median([r.get("first_prompt") or None for r in rows]),
        "gen_tps": median([r.get("gen_tps") for r in rows]),
    }


def timed_out(row):
    """The run was stopped at the time limit (turn killed by signal, or a peer's run expired)."""
    if "timed_out" in row:
        return row["timed_out"]
    return row.get("exit") == "timeout" or (row.get("exit") in (-15, -9) and row.get("seconds", 0) >= 290)


def median(values):
    values = sorted(v for v in values if isinstance(v, (int, float)))
    return values[len(values) // 2] if values else None


def agent_rank(agent):
    return AGENT_ORDER.index(agent) if agent in AGENT_ORDER else len(AGENT_ORDER)


def model_title(model):
    return livelib.MODELS[model]["title"].split("-Instruct")[0].replace("Qwen2.5-Coder-", "Qwen2.5-Coder ") \
        if model in livelib.MODELS else model


def short_version(meta):
    """turn's --version without the target and date (the commit has its own column)."""
    version = meta.get("agent_version", "?")
    return version.split(" (")[0] if version.startswith("turn ") else version


def summary_tables(best, samples=None):
    """README's tables: per set, a row per window, agent and model; then the set's repeated runs."""
    out = []
    samples = samples or {}
    sets = sorted({k[0] for k in best} | {k[0] for k in samples}, key=lambda s: list(SETS).index(s) if s in SETS else 9)
    machines = sorted({d["meta"].get("machine", "?") for d in best.values()})
    for set_name in sets:
        total = len(task_names(set_name)) if set_name in SETS else "?"
        out += [f"**{SET_TITLES.get(set_name, set_name)}**: {total} tasks.", "",
                "| window | agent | model | passed | stopped at the time limit | requests | "
                "prompt tokens processed / reused | first request's prompt (tokens, median) | wall | "
                "server tokens/s (prompt, generation; median) | date | commit | version |",
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        keys = {k for k in best if k[0] == set_name}
        keys |= {(set_name, ctx, agent, GRID["model"]) for ctx in GRID["ctx"] for agent in GRID["agents"]}
        keys = sorted(keys, key=lambda k: (-k[1], k[3] != "1.5b", k[3], agent_rank(k[2])))
        for key in keys:
            if key not in best:
                out.append(f"| `-c {key[1]}` | {AGENT_TITLES.get(key[2], key[2])} | {model_title(key[3])} | "
                           "not run | - | - | - | - | - | - | - | - | - |")
                continue
            data = best[key]
            m, t = data["meta"], totals(data["rows"].values())
            done = "" if t["done"] == total else f" ({t['done']} of {total} run)"
            out.append(f"| `-c {key[1]}` | {AGENT_TITLES.get(key[2], key[2])} | {model_title(key[3])} | "
                       f"**{t['passed']}/{t['done']}**{done} | {t['timeouts']} | {t['requests']} | "
                       f"{t['processed']} / {t['reused']} ({pct(t['reused'], t['processed'] + t['reused'])} reused) | "
                       f"{t['first_prompt'] or '-'} | {t['seconds'] / 60:.1f} min | {t['prompt_tps'] or '-'}, {t['gen_tps'] or '-'} | "
                       f"{m.get('updated', '?')[:10]} | {m.get('commit', '?')} | {short_version(m)}"
                       f"{' (' + m['note'] + ')' if m.get('note') else ''} |")
        out.append("")
        out += first_prompt_pairs(best, set_name)
        out += sample_summary(samples, set_name)
        blind = [n for n in task_names(set_name) if by_design("aider-whole", set_name, n)] if set_name in SETS else []
        if blind and any(k[2] == "aider-whole" and k in best for k in keys):
            which = f"{len(blind)} of these tasks ({', '.join(blind)}) needs" if len(blind) == 1 else \
                f"{len(blind)} of these tasks ({', '.join(blind)}) need"
            out += [f"aider runs no commands unless told, by design: {which} a command's output, so it cannot "
                    f"pass there; such runs are made and counted as failures.", ""]
    if best:
        any_meta = next(iter(best.values()))["meta"]
        threads = sorted({str(d["meta"].get("threads", "2")) for d in best.values()})
        flags = sorted({d["meta"]["server_flags"] for d in best.values() if d["meta"].get("server_flags")})
        flags = f"; `{'`, `'.join(flags)}` on the machines with AMX, see live/livelib.py" if flags else ""
        out.append(f"Machine: {'; '.join(machines)}. llama.cpp build {any_meta.get('llama', '?')} "
                   f"(`llama-server --jinja -t {' or -t '.join(threads)}`{flags}, a fresh server for every run of a task unless noted), "
                   f"temperature {any_meta.get('temperature', '?')}, at most {any_meta.get('max_steps', '?')} steps "
                   f"and {any_meta.get('timeout', '?')} s per task for every agent. Per-task rows and the "
                   f"checkers' reasons for each failure: [live/RESULTS.md](live/RESULTS.md); what the numbers mean and "
                   f"the held-out rule: [live/README.md](live/README.md).")
        out.append("")
    return "\n".join(out)


def by_task(rows):
    """A sampled file's rows per task: {task: {seed: row}}."""
    found = {}
    for r in rows.values():
        found.setdefault(r["task"], {})[r.get("seed")] = r
    return found


def sample_summary(samples, set_name):
    """README's lines for a set's repeated runs: passes counted over every run of every task."""
    keys = sorted((k for k in samples if k[0] == set_name), key=lambda k: (-k[1], k[4], k[3], agent_rank(k[2])))
    if not keys:
        return []
    out = [f"Repeated runs: each task run once per seed at a temperature above 0 (llama-server `--seed`, a fresh "
           "server per run), so that one task's luck at temperature 0 does not decide a comparison. Per task and "
           "seed: [live/RESULTS.md](live/RESULTS.md).", "",
           "| window | agent | model | temperature | seeds | runs passed | tasks passed in some run | in every run | "
           "requests | stopped at the time limit | date | commit |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for key in keys:
        data = samples[key]
        m, tasks = data["meta"], by_task(data["rows"])
        runs = [r for per in tasks.values() for r in per.values()]
        seeds = sorted({s for per in tasks.values() for s in per if s is not None})
        some = sum(1 for per in tasks.values() if any(r["passed"] for r in per.values()))
        every = sum(1 for per in tasks.values() if all(r["passed"] for r in per.values()))
        out.append(f"| `-c {key[1]}` | {AGENT_TITLES.get(key[2], key[2])} | {model_title(key[3])} | {key[4]} | "
                   f"{','.join(map(str, seeds))} | **{sum(r['passed'] for r in runs)}/{len(runs)}** | "
                   f"{some}/{len(tasks)} | {every}/{len(tasks)} | {sum(r.get('requests', 0) for r in runs)} | "
                   f"{sum(1 for r in runs if timed_out(r))} | {m.get('updated', '?')[:10]} | {m.get('commit', '?')} |")
    return out + [""]


def sample_details(samples):
    """live/RESULTS.md's repeated runs: per set, window, model and temperature, a task's passes
    out of its runs for each agent, and the seeds it passed with."""
    out = []
    groups = sorted({(k[0], k[1], k[3], k[4]) for k in samples},
                    key=lambda g: (list(SETS).index(g[0]) if g[0] in SETS else 9, -g[1], g[2], g[3]))
    for set_name, ctx, model, temperature in groups:
        agents = sorted((k[2] for k in samples if (k[0], k[1], k[3], k[4]) == (set_name, ctx, model, temperature)),
                        key=agent_rank)
        per_agent = {a: by_task(samples[(set_name, ctx, a, model, temperature)]["rows"]) for a in agents}
        names = sorted({n for tasks in per_agent.values() for n in tasks})
        out += [f"## {SET_TITLES.get(set_name, set_name)}, `-c {ctx}`, {model_title(model)}, repeated runs at "
                f"temperature {temperature}", "",
                "A cell is the runs passed out of the runs made, then the seeds that passed.", "",
                "| task | " + " | ".join(AGENT_TITLES.get(a, a) for a in agents) + " |",
                "| --- |" + " --- |" * len(agents)]
        for name in names:
            cells = []
            for agent in agents:
                per = per_agent[agent].get(name)
                if not per:
                    cells.append("not run")
                    continue
                won = sorted(s for s, r in per.items() if r["passed"] and s is not None)
                cells.append(f"{sum(r['passed'] for r in per.values())}/{len(per)}"
                             f"{' (' + ','.join(map(str, won)) + ')' if won else ''}")
            out.append(f"| {name} | " + " | ".join(cells) + " |")
        row = []
        for agent in agents:
            runs = [r for per in per_agent[agent].values() for r in per.values()]
            row.append(f"**{sum(r['passed'] for r in runs)}/{len(runs)}**")
        out += ["| **runs passed** | " + " | ".join(row) + " |", ""]
        for agent in agents:
            m = samples[(set_name, ctx, agent, model, temperature)]["meta"]
            out.append(f"- {AGENT_TITLES.get(agent, agent)}: {m.get('agent_version', '?')}; commit "
                       f"{m.get('commit', '?')}; {m.get('updated', '?')}. {m.get('how', '')}".rstrip())
        out.append("")
    return "\n".join(out)


def first_prompt_pairs(best, set_name):
    """A line per window where turn and aider both ran: their first requests compared on the
    tasks where both were counted (a median over different tasks says little)."""
    out = []
    for (set_, ctx, agent, model), data in sorted(best.items(), key=lambda kv: (-kv[0][1], agent_rank(kv[0][2]))):
        other = best.get((set_name, ctx, "aider-whole", model))
        if set_ != set_name or not agent.startswith("turn") or not other:
            continue
        pairs = [(r.get("first_prompt"), other["rows"][n].get("first_prompt")) for n, r in sorted(data["rows"].items())
                 if n in other["rows"]]
        pairs = [(a, b) for a, b in pairs if a and b]
        if not pairs:
            continue
        smaller = sum(1 for a, b in pairs if a < b)
        out.append(f"- First request, `-c {ctx}`, {model_title(model)}, on the {len(pairs)} tasks where both were "
                   f"counted: {AGENT_TITLES.get(agent, agent)} {median([a for a, _ in pairs])} tokens (median), "
                   f"aider {median([b for _, b in pairs])}; smaller than aider's on {smaller} of {len(pairs)}.")
    return out + [""] if out else []


def task_table(data, set_name):
    agent = data["meta"]["agent"]
    calls = agent.startswith("turn")
    lines = ["| task | result | requests |" + (" calls (as text) |" if calls else "") +
             " wall | prompt tokens processed / reused (reused %) | "
             "first request's prompt | server tokens/s (prompt, generation) | exit |",
             "| --- | --- | --- |" + (" --- |" if calls else "") + " --- | --- | --- | --- | --- |"]
    for name in sorted(data["rows"]):
        r = data["rows"][name]
        result = "pass" if r["passed"] else "FAIL"
        if r.get("rejected"):
            result += f" ({len(r['rejected'])} rejected)"
        if by_design(agent, set_name, name) if set_name in SETS and os.path.isdir(task_dir(set_name, name)) else []:
            result += " †"
        made = f" {r.get('tool_calls', 0)} ({r.get('text_calls', 0)}) |" if calls else ""
        lines.append(f"| {name} | {result} | {r.get('requests', 0)} |{made} {r.get('seconds', 0):.0f} s | "
                     f"{r.get('processed', 0)} / {r.get('reused', 0)} "
                     f"({pct(r.get('reused', 0), r.get('processed', 0) + r.get('reused', 0))}) | "
                     f"{r.get('first_prompt') or '-'} | {r.get('prompt_tps') or '-'}, {r.get('gen_tps') or '-'} | "
                     f"{r.get('exit', '')} |")
    t = totals(data["rows"].values())
    made = " |" if calls else ""
    lines.append(f"| **all** | **{t['passed']}/{t['done']}** | {t['requests']} |{made} {t['seconds']:.0f} s | "
                 f"{t['processed']} / {t['reused']} ({pct(t['reused'], t['processed'] + t['reused'])}) | | | |")
    return lines


def details(best):
    """live/RESULTS.md's body: per set, window and model, the agents side by side, then each agent's
    per-task rows and its failures in the checker's words."""
    out = []
    groups = sorted({(k[0], k[1], k[3]) for k in best},
                    key=lambda g: (list(SETS).index(g[0]) if g[0] in SETS else 9, -g[1], g[2] != "1.5b", g[2]))
    for set_name, ctx, model in groups:
        agents = sorted((k[2] for k in best if (k[0], k[1], k[3]) == (set_name, ctx, model)), key=agent_rank)
        names = task_names(set_name) if set_name in SETS else []
        for agent in agents:
            names += [n for n in best[(set_name, ctx, agent, model)]["rows"] if n not in names]
        out += [f"## {SET_TITLES.get(set_name, set_name)}, `-c {ctx}`, {model_title(model)}", ""]
        out.append("| task | " + " | ".join(AGENT_TITLES.get(a, a) for a in agents) + " |")
        out.append("| --- |" + " --- |" * len(agents))
        marks = []
        for name in names:
            cells = []
            for agent in agents:
                r = best[(set_name, ctx, agent, model)]["rows"].get(name)
                if r is None:
                    cells.append("not run")
                    continue
                cell = f"{'pass' if r['passed'] else 'FAIL'} ({r.get('requests', 0)} req, {r.get('seconds', 0):.0f} s)"
                if set_name in SETS and os.path.isdir(task_dir(set_name, name)) and by_design(agent, set_name, name):
                    cell += " †"
                    marks += by_design(agent, set_name, name)
                cells.append(cell)
            out.append(f"| {name} | " + " | ".join(cells) + " |")
        row = []
        for agent in agents:
            t = totals(best[(set_name, ctx, agent, model)]["rows"].values())
            row.append(f"**{t['passed']}/{t['done']}**")
        out += ["| **passed** | " + " | ".join(row) + " |", ""]
        for text in sorted(set(marks)):
            out += [f"† {text}.", ""]
        for agent in agents:
            data = best[(set_name, ctx, agent, model)]
            m = data["meta"]
            out += [f"### {AGENT_TITLES.get(agent, agent)}", "",
                    f"{m.get('agent_version', '?')}; commit {m.get('commit', '?')}; {m.get('updated', '?')}; "
                    f"{m.get('machine', '?')}. {m.get('how', '')}".rstrip(), ""]
            out += task_table(data, set_name) + [""]
            fails = [r for _, r in sorted(data["rows"].items()) if not r["passed"]]
            if fails:
                out += ["Why the failures failed (the checker's words):", ""]
                for r in fails:
                    extra = f"; server refused: {r['rejected'][0]}" if r.get("rejected") else ""
                    if r.get("note"):
                        extra += f"; {r['note']}"
                    out.append(f"- {r['task']}: {r['why']}{extra}")
                out.append("")
    return "\n".join(out)


def render():
    """Writes live/RESULTS.md and README's table (only between its live-results markers)."""
    found = load_all()
    best, samples = newest(found), newest(found, samples=True)
    summary = summary_tables(best, samples) if best or samples else \
        "No live results stored yet (`make live`, `make live-peers`).\n"
    head = ("# Live results\n\nWritten by `make live` and `make live-peers` (live/suite, live/peers, rendered "
            "by live/results.py from the raw results in live/results/); README.md shows the summary. "
            "What the numbers mean: live/README.md.\n\n")
    # Atomic writes: live/suite and live/peers may render at the same time.
    livelib.atomic_write(RESULTS_MD, head + "## Summary\n\n" + summary + "\n" + details(best) +
                         ("\n" + sample_details(samples) if samples else ""))
    with open(README) as f:
        readme = f.read()
    start, end = "<!-- live-results:start -->\n", "<!-- live-results:end -->"
    if start in readme and end in readme:
        before, rest = readme.split(start, 1)
        _, after = rest.split(end, 1)
        livelib.atomic_write(README, before + start + summary + end + after)


if __name__ == "__main__":
    if sys.argv[1:] == ["--check-checkers"]:
        sys.exit(1 if check_checkers(list(SETS)) else 0)
    render()
    print(f"written: {os.path.relpath(RESULTS_MD, livelib.ROOT)} and README.md's live-results section")
