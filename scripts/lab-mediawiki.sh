#!/usr/bin/env bash
# A private MediaWiki (Debian's package, unmodified) for the real-app lab: its own LocalSettings.php and SQLite
# database under DIR, a free loopback port, PHP's built-in server. The code stays in /usr/share/mediawiki;
# `MW_CONFIG_FILE` points it at DIR/LocalSettings.php (it otherwise reads /var/lib/mediawiki). Nothing under
# /etc or /var/lib is written, no service is started. Installed by MediaWiki's own `maintenance/install.php`
# (SQLite, the default skin, no extension), then VisualEditor loaded: anonymous visitors read and edit, as the
# installer leaves a wiki.
#   scripts/lab-mediawiki.sh start DIR   prints the base URL (http://127.0.0.1:PORT)
#   scripts/lab-mediawiki.sh stop DIR    stops the server and removes DIR
# Users (password `lab-password`): Oncepost, Other, Lab1..Lab4, and Visual and Newcomer, who use only VisualEditor
# (MediaWiki capitalises the first letter).
set -euo pipefail

cmd=${1:?usage: lab-mediawiki.sh start|stop DIR}
dir=${2:?usage: lab-mediawiki.sh start|stop DIR}
code=/usr/share/mediawiki

case "$cmd" in
start)
    [ -f "$code/index.php" ] || { echo "lab-mediawiki: no $code (apt-get install mediawiki; scripts/setup.sh)" >&2; exit 1; }
    command -v php >/dev/null || { echo "lab-mediawiki: no php (scripts/setup.sh)" >&2; exit 1; }
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    export MW_CONFIG_FILE="$dir/LocalSettings.php"
    # install.php refuses to run over an existing LocalSettings.php: it writes the one MW_CONFIG_FILE names.
    (cd "$code" && php maintenance/install.php --dbtype=sqlite --dbpath="$dir/db" --dbname=labwiki \
        --server="http://127.0.0.1:$port" --scriptpath="" --lang=en --pass=lab-password-admin \
        --confpath="$dir" "Lab Wiki" Admin >"$dir/install.log" 2>&1) \
        || { echo "lab-mediawiki: install.php failed" >&2; cat "$dir/install.log" >&2; exit 1; }
    cat >>"$dir/LocalSettings.php" <<'EOF2'
# The lab's own settings (scripts/lab-mediawiki.sh).
# Show who last edited a page at its foot ("... by USER"), as many wikis do: the read-back's author.
$wgMaxCredits = 1;
# The tests save many pages a minute as new users; MediaWiki's default limits them to 8 edits a minute.
$wgGroupPermissions['user']['noratelimit'] = true;
$wgEnableEmail = false;
$wgShowExceptionDetails = true;
# VisualEditor, bundled with the package and off until loaded: the editor `selectors/mediawiki-visualeditor.toml`
# publishes through (`?veaction=edit`); the wikitext form (`action=edit`) stays as it was.
wfLoadExtension( 'VisualEditor' );
$wgDefaultUserOptions['visualeditor-enable'] = 1;
EOF2
    for u in Oncepost Other Lab1 Lab2 Lab3 Lab4 Visual Newcomer; do
        (cd "$code" && php maintenance/createAndPromote.php "$u" lab-password >>"$dir/install.log" 2>&1) \
            || { echo "lab-mediawiki: user $u not created" >&2; cat "$dir/install.log" >&2; exit 1; }
    done
    # Several workers: the tests publish in parallel, and one PHP worker serves one request at a time.
    PHP_CLI_SERVER_WORKERS=4 setsid php -d display_errors=0 \
        -S "127.0.0.1:$port" -t "$code" >"$dir/server.log" 2>&1 </dev/null &
    echo $! >"$dir/pid"
    for _ in $(seq 1 100); do
        if curl -fsS -o /dev/null "http://127.0.0.1:$port/index.php?title=Main_Page"; then
            echo "$port" >"$dir/port"
            echo "http://127.0.0.1:$port"
            exit 0
        fi
        sleep 0.05
    done
    echo "lab-mediawiki: not serving after 5 s" >&2
    cat "$dir/server.log" >&2
    exit 1
    ;;
stop)
    if [ -f "$dir/pid" ]; then
        # setsid made the server a process group leader: its workers go with it.
        kill -- -"$(cat "$dir/pid")" 2>/dev/null || true
    fi
    rm -rf "$dir"
    ;;
*)
    echo "usage: lab-mediawiki.sh start|stop DIR" >&2; exit 2 ;;
esac
