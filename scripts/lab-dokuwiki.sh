#!/usr/bin/env bash
# A private DokuWiki (Debian's package, unmodified) for the real-app lab: its own conf and data dir under DIR, a
# free loopback port, PHP's built-in server. The code stays in /usr/share/dokuwiki; a PHP prepend file points it
# at DIR/conf (it otherwise reads /etc/dokuwiki). Nothing under /etc or /var/lib is written, no service is
# started. ACL is on: anonymous visitors read, the users below edit.
#   scripts/lab-dokuwiki.sh start DIR   prints the base URL (http://127.0.0.1:PORT)
#   scripts/lab-dokuwiki.sh stop DIR    stops the server and removes DIR
# Users (password `lab-password`): oncepost, other, and lab1..lab8.
set -euo pipefail

cmd=${1:?usage: lab-dokuwiki.sh start|stop DIR}
dir=${2:?usage: lab-dokuwiki.sh start|stop DIR}
code=/usr/share/dokuwiki

case "$cmd" in
start)
    [ -f "$code/doku.php" ] || { echo "lab-dokuwiki: no $code (apt-get install dokuwiki php-cli; scripts/setup.sh)" >&2; exit 1; }
    command -v php >/dev/null || { echo "lab-dokuwiki: no php (scripts/setup.sh)" >&2; exit 1; }
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    cp -rL /etc/dokuwiki "$dir/conf"
    cp -r /var/lib/dokuwiki/data "$dir/data"
    cat >"$dir/conf/local.php" <<EOF
<?php
\$conf['title'] = 'oncepost lab wiki';
\$conf['savedir'] = '$dir/data';
\$conf['useacl'] = 1;
\$conf['superuser'] = '@admin';
\$conf['authtype'] = 'authplain';
\$conf['updatecheck'] = 0;
\$conf['userewrite'] = 0;
\$conf['usedraft'] = 1;
\$conf['breadcrumbs'] = 0;
EOF
    cat >"$dir/conf/acl.auth.php" <<'EOF'
# acl.auth.php
*               @ALL          1
*               @user         8
EOF
    hash=$(php -r 'echo password_hash("lab-password", PASSWORD_BCRYPT, ["cost" => 4]);')
    {
        echo "# users.auth.php"
        for u in oncepost other lab1 lab2 lab3 lab4 lab5 lab6 lab7 lab8; do
            echo "$u:$hash:Lab user $u:$u@lab.invalid:user"
        done
    } >"$dir/conf/users.auth.php"
    cat >"$dir/prepend.php" <<EOF
<?php
define('DOKU_MAIN_CONF', '$dir/conf/');
define('DOKU_CONF', '$dir/conf/');
EOF
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    # Several workers: the tests publish in parallel, and one PHP worker serves one request at a time.
    PHP_CLI_SERVER_WORKERS=4 setsid php -d auto_prepend_file="$dir/prepend.php" -d display_errors=0 \
        -S "127.0.0.1:$port" -t "$code" >"$dir/server.log" 2>&1 </dev/null &
    echo $! >"$dir/pid"
    for _ in $(seq 1 100); do
        if curl -fsS -o /dev/null "http://127.0.0.1:$port/doku.php"; then
            echo "$port" >"$dir/port"
            echo "http://127.0.0.1:$port"
            exit 0
        fi
        sleep 0.05
    done
    echo "lab-dokuwiki: not serving after 5 s" >&2
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
    echo "usage: lab-dokuwiki.sh start|stop DIR" >&2; exit 2 ;;
esac
