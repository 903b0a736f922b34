#!/usr/bin/env bash
# A private Redmine (Debian's package, unmodified) for the real-app lab: a copy of its tree (16 MB) under DIR
# with an instance of its own (Debian's multi-instance layout: REDMINE_INSTANCE=lab, its database.yml and
# secret under DIR), SQLite, a free loopback port, Rails' WEBrick server. Nothing under /etc or /var/lib is
# written, no service is started. One public project `lab` with the issue tracker; every user below is a
# member who may add issues.
#   scripts/lab-redmine.sh start DIR   prints the base URL (http://127.0.0.1:PORT)
#   scripts/lab-redmine.sh stop DIR    stops the server and removes DIR
# Users (password `lab-password`): oncepost, other, lab1..lab4 (shown as "Oncepost Lab", "Other Lab", ...).
set -euo pipefail

cmd=${1:?usage: lab-redmine.sh start|stop DIR}
dir=${2:?usage: lab-redmine.sh start|stop DIR}
code=/usr/share/redmine

case "$cmd" in
start)
    [ -f "$code/config.ru" ] || { echo "lab-redmine: no $code (apt-get install redmine redmine-sqlite ruby-webrick; scripts/setup.sh)" >&2; exit 1; }
    command -v bundle >/dev/null || { echo "lab-redmine: no bundle (scripts/setup.sh)" >&2; exit 1; }
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    app="$dir/app"
    mkdir -p "$app"
    # The tree without Debian's instances (a link to /var/lib/redmine) and its own database.yml (a link to
    # the default instance's under /etc).
    for f in "$code"/*; do
        case "$(basename "$f")" in instances | Gemfile.lock) ;; *) cp -rL "$f" "$app/" ;; esac
    done
    rm -f "$app/config/database.yml"
    # Debian's Gemfile.lock is made for the adapters of the system's instances; this one names SQLite and
    # the server, resolved from the installed gems only (no network).
    printf "gem 'sqlite3', '~> 1.4.0'\ngem 'webrick'\n" >"$app/Gemfile.local"
    (cd "$app" && bundle lock --local >"$dir/bundle.log" 2>&1) \
        || { echo "lab-redmine: bundle lock failed" >&2; cat "$dir/bundle.log" >&2; exit 1; }
    inst="$app/instances/lab"
    mkdir -p "$inst/config" "$inst/files" "$inst/log" "$inst/tmp/cache" "$inst/public"
    printf "production:\n  adapter: sqlite3\n  database: %s/redmine.sqlite3\n  encoding: utf8\n" "$dir" \
        >"$inst/config/database.yml"
    head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$inst/config/secret_key.txt"
    export REDMINE_INSTANCE=lab RAILS_ENV=production REDMINE_LANG=en
    # Two runs: the default data needs the models as the migrations left them.
    (cd "$app" && ruby bin/rake db:migrate >"$dir/install.log" 2>&1) \
        || { echo "lab-redmine: migration failed" >&2; tail -30 "$dir/install.log" >&2; exit 1; }
    (cd "$app" && ruby bin/rake redmine:load_default_data >>"$dir/install.log" 2>&1) \
        || { echo "lab-redmine: default data not loaded" >&2; tail -30 "$dir/install.log" >&2; exit 1; }
    cat >"$dir/seed.rb" <<'EOF2'
# The REST API: the tests count issues through it, as any reader of the project could.
Setting.rest_api_enabled = '1'
role = Role.find_by(name: 'Developer') || Role.givable.first
project = Project.find_or_create_by!(identifier: 'lab') do |p|
  p.name = 'Lab'
  p.is_public = true
  p.enabled_module_names = ['issue_tracking']
  p.trackers = Tracker.all
end
%w[oncepost other lab1 lab2 lab3 lab4].each do |login|
  u = User.find_by(login: login) ||
      User.new(firstname: login.capitalize, lastname: 'Lab', mail: "#{login}@lab.invalid")
  u.login = login
  u.password = 'lab-password'
  u.password_confirmation = 'lab-password'
  u.status = User::STATUS_ACTIVE
  u.must_change_passwd = false
  u.save!
  unless Member.exists?(user_id: u.id, project_id: project.id)
    Member.create!(principal: u, project: project, roles: [role])
  end
end
EOF2
    (cd "$app" && ruby bin/rails runner "$dir/seed.rb" >>"$dir/install.log" 2>&1) \
        || { echo "lab-redmine: seeding failed" >&2; tail -30 "$dir/install.log" >&2; exit 1; }
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    cd "$app"
    setsid ruby bin/rails server -u webrick -e production -b 127.0.0.1 -p "$port" \
        >"$dir/server.log" 2>&1 </dev/null &
    echo $! >"$dir/pid"
    for _ in $(seq 1 200); do
        if curl -fsS -o /dev/null "http://127.0.0.1:$port/projects/lab" 2>/dev/null; then
            echo "$port" >"$dir/port"
            echo "http://127.0.0.1:$port"
            exit 0
        fi
        sleep 0.1
    done
    echo "lab-redmine: not serving after 20 s" >&2
    cat "$dir/server.log" >&2
    exit 1
    ;;
stop)
    if [ -f "$dir/pid" ]; then
        # setsid made the server a process group leader.
        kill -- -"$(cat "$dir/pid")" 2>/dev/null || kill "$(cat "$dir/pid")" 2>/dev/null || true
    fi
    rm -rf "$dir"
    ;;
*)
    echo "usage: lab-redmine.sh start|stop DIR" >&2; exit 2 ;;
esac
