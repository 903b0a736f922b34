#!/usr/bin/env bash
# A private WordPress (Debian's package, unmodified) for the real-app lab: a copy of /usr/share/wordpress under
# DIR (Debian's wp-config.php only reads /etc/wordpress, so the copy gets its own), a private MariaDB (own
# datadir, a socket, no network), PHP's built-in server on a free loopback port. Nothing under /etc or
# /var/lib is written, no service is started.
#   scripts/lab-wordpress.sh start DIR   prints the base URL (http://127.0.0.1:PORT)
#   scripts/lab-wordpress.sh stop DIR    stops both servers and removes DIR
#   scripts/lab-wordpress.sh sql DIR Q   runs one SQL statement on the site's database, prints tab-separated rows
#   scripts/lab-wordpress.sh post DIR USER TITLE TEXT   publishes a post as USER (another person); prints its ID
# Users (password `lab-password`, role author): oncepost, other, lab1..lab8; admin `admin`.
set -euo pipefail

cmd=${1:?usage: lab-wordpress.sh start|stop|sql DIR}
dir=${2:?usage: lab-wordpress.sh start|stop|sql DIR}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

case "$cmd" in
start)
    [ -f /usr/share/wordpress/wp-login.php ] || { echo "lab-wordpress: no /usr/share/wordpress (scripts/setup.sh)" >&2; exit 1; }
    command -v mariadbd >/dev/null || [ -x /usr/sbin/mariadbd ] || { echo "lab-wordpress: no mariadbd (scripts/setup.sh)" >&2; exit 1; }
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    # MariaDB runs as its own user, who must be able to walk to its datadir (a 0700 temp dir stops it).
    chmod 755 "$dir"
    dbuser=$(id -un)
    if [ "$(id -u)" = 0 ]; then dbuser=mysql; fi
    # The datadir and the dir of the socket, pid and log belong to the server's user.
    mkdir -p "$dir/db" "$dir/run"
    if [ "$(id -u)" = 0 ]; then chown mysql "$dir/db" "$dir/run"; fi
    mariadb-install-db --no-defaults --datadir="$dir/db" --user="$dbuser" --skip-test-db \
        --auth-root-authentication-method=socket >"$dir/install-db.log" 2>&1 \
        || { cat "$dir/install-db.log" >&2; exit 1; }
    sock="$dir/run/my.sock"
    setsid /usr/sbin/mariadbd --no-defaults --datadir="$dir/db" --socket="$sock" --skip-networking \
        --user="$dbuser" --pid-file="$dir/run/mariadb.pid" --log-error="$dir/run/mariadb.log" \
        --innodb-buffer-pool-size=32M --innodb-log-file-size=16M --innodb-flush-log-at-trx-commit=2 \
        </dev/null >/dev/null 2>&1 &
    echo $! >"$dir/mariadb.launcher"
    for _ in $(seq 1 200); do [ -S "$sock" ] && break; sleep 0.05; done
    [ -S "$sock" ] || { echo "lab-wordpress: MariaDB did not start" >&2; cat "$dir/run/mariadb.log" >&2; exit 1; }
    mariadb --no-defaults -S "$sock" -u root -e \
        "CREATE DATABASE wp CHARACTER SET utf8mb4; CREATE USER 'wp'@'localhost' IDENTIFIED BY 'wp'; GRANT ALL ON wp.* TO 'wp'@'localhost';"

    cp -rL /usr/share/wordpress "$dir/wp"
    cat >"$dir/wp/wp-config.php" <<EOF
<?php
// The lab's own config (Debian's reads /etc/wordpress). Behind a reverse proxy (oncepost fixtures proxy)
// the site names itself by the host the browser asked for, as a site behind nginx is configured to.
if (isset(\$_SERVER['HTTP_X_FORWARDED_HOST'])) { \$_SERVER['HTTP_HOST'] = \$_SERVER['HTTP_X_FORWARDED_HOST']; }
\$lab_host = isset(\$_SERVER['HTTP_HOST']) ? \$_SERVER['HTTP_HOST'] : 'localhost';
define('WP_HOME', 'http://' . \$lab_host);
define('WP_SITEURL', 'http://' . \$lab_host);
// One cookie name whatever the host (the default hashes the site URL).
define('COOKIEHASH', 'oncepostlab');
define('DB_NAME', 'wp');
define('DB_USER', 'wp');
define('DB_PASSWORD', 'wp');
define('DB_HOST', 'localhost:$sock');
define('DB_CHARSET', 'utf8mb4');
define('DB_COLLATE', '');
\$table_prefix = 'wp_';
define('AUTH_KEY', 'lab-auth'); define('SECURE_AUTH_KEY', 'lab-secure'); define('LOGGED_IN_KEY', 'lab-logged');
define('NONCE_KEY', 'lab-nonce'); define('AUTH_SALT', 'lab-as'); define('SECURE_AUTH_SALT', 'lab-sas');
define('LOGGED_IN_SALT', 'lab-ls'); define('NONCE_SALT', 'lab-ns');
define('WP_DEBUG', false);
define('AUTOMATIC_UPDATER_DISABLED', true);
define('WP_AUTO_UPDATE_CORE', false);
define('DISABLE_WP_CRON', true);
define('WP_HTTP_BLOCK_EXTERNAL', true);
if (!defined('ABSPATH')) { define('ABSPATH', __DIR__ . '/'); }
require_once ABSPATH . 'wp-settings.php';
EOF
    # PHP's server has no rewrite rules: serve files as they are, everything else through index.php.
    cat >"$dir/router.php" <<'EOF'
<?php
$path = parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH);
$file = $_SERVER['DOCUMENT_ROOT'] . $path;
if ($path !== '/' && file_exists($file) && !is_dir($file)) { return false; }
if (is_dir($file) && file_exists(rtrim($file, '/') . '/index.php')) { return false; }
$_SERVER['SCRIPT_NAME'] = '/index.php';
require $_SERVER['DOCUMENT_ROOT'] . '/index.php';
EOF
    port=$(free_port)
    # Two workers at least: the install and the block editor make requests to the site from the site.
    PHP_CLI_SERVER_WORKERS=4 setsid php -d display_errors=0 -d memory_limit=256M \
        -S "127.0.0.1:$port" -t "$dir/wp" "$dir/router.php" >"$dir/server.log" 2>&1 </dev/null &
    echo $! >"$dir/php.pid"
    base="http://127.0.0.1:$port"
    for _ in $(seq 1 100); do curl -fsS -o /dev/null "$base/wp-login.php" 2>/dev/null && break; sleep 0.05; done
    curl -fsS -o /dev/null --max-time 60 \
        --data-urlencode "weblog_title=oncepost lab" --data-urlencode "user_name=admin" \
        --data-urlencode "admin_password=lab-password" --data-urlencode "admin_password2=lab-password" \
        --data-urlencode "pw_weak=1" --data-urlencode "admin_email=admin@lab.invalid" \
        --data-urlencode "blog_public=0" --data-urlencode "language=" \
        "$base/wp-admin/install.php?step=2" || { echo "lab-wordpress: install failed" >&2; cat "$dir/server.log" >&2; exit 1; }
    # Users and settings through WordPress's own API (Debian has no wp-cli).
    cat >"$dir/setup-users.php" <<EOF
<?php
\$_SERVER['HTTP_HOST'] = '127.0.0.1:$port';
define('WP_USE_THEMES', false);
require '$dir/wp/wp-load.php';
foreach (array('oncepost', 'other', 'lab1', 'lab2', 'lab3', 'lab4', 'lab5', 'lab6', 'lab7', 'lab8') as \$u) {
    \$id = wp_insert_user(array('user_login' => \$u, 'user_pass' => 'lab-password', 'user_email' => "\$u@lab.invalid",
        'display_name' => \$u, 'role' => 'author'));
    if (is_wp_error(\$id)) { fwrite(STDERR, \$id->get_error_message() . "\n"); exit(1); }
    // The block editor's first-visit guide is a per-user preference: seen.
    update_user_meta(\$id, 'wp_persisted_preferences', array('core/edit-post' => array('welcomeGuide' => false), '_modified' => gmdate('c')));
}
update_option('show_avatars', 0);
// Plain permalinks (`/?p=ID`, WordPress's default): every link to a post carries its ID.
update_option('permalink_structure', '');
EOF
    php -d display_errors=stderr "$dir/setup-users.php" || { echo "lab-wordpress: users" >&2; exit 1; }
    echo "$port" >"$dir/port"
    echo "$base"
    ;;
stop)
    if [ -f "$dir/php.pid" ]; then kill -- -"$(cat "$dir/php.pid")" 2>/dev/null || true; fi
    if [ -f "$dir/run/mariadb.pid" ]; then kill "$(cat "$dir/run/mariadb.pid")" 2>/dev/null || true; fi
    if [ -f "$dir/mariadb.launcher" ]; then kill -- -"$(cat "$dir/mariadb.launcher")" 2>/dev/null || true; fi
    for _ in $(seq 1 100); do [ -S "$dir/run/my.sock" ] || break; sleep 0.05; done
    rm -rf "$dir"
    ;;
post)
    # Publish a post as another person would, through WordPress's own API: prints its ID.
    user=${3:?usage: lab-wordpress.sh post DIR USER TITLE TEXT}
    title=${4:?}
    text=${5:?}
    LAB_USER="$user" LAB_TITLE="$title" LAB_TEXT="$text" LAB_HOST="127.0.0.1:$(cat "$dir/port")" LAB_WP="$dir/wp" \
        php -d display_errors=stderr -r '
        $_SERVER["HTTP_HOST"] = getenv("LAB_HOST");
        define("WP_USE_THEMES", false);
        require getenv("LAB_WP") . "/wp-load.php";
        $u = get_user_by("login", getenv("LAB_USER"));
        if (!$u) { fwrite(STDERR, "no user\n"); exit(1); }
        $id = wp_insert_post(array("post_title" => getenv("LAB_TITLE"),
            "post_content" => "<!-- wp:paragraph -->\n<p>" . esc_html(getenv("LAB_TEXT")) . "</p>\n<!-- /wp:paragraph -->",
            "post_status" => "publish", "post_author" => $u->ID), true);
        if (is_wp_error($id)) { fwrite(STDERR, $id->get_error_message() . "\n"); exit(1); }
        echo $id, "\n";'
    ;;
sql)
    q=${3:?usage: lab-wordpress.sh sql DIR QUERY}
    mariadb --no-defaults -S "$dir/run/my.sock" -u root -N -B wp -e "$q"
    ;;
*)
    echo "usage: lab-wordpress.sh start|stop|sql DIR" >&2; exit 2 ;;
esac
