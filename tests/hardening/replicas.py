"""A PostgreSQL primary and its streaming replica, each its own cluster on a free loopback port in a
temporary folder: initdb with wal_level=replica and a replication entry in pg_hba, the replica taken
with `pg_basebackup -R`. As root the servers run as the `postgres` OS user, as PostgreSQL requires."""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

from .servers import free_port

DATABASE = "nodelodge"


def postgresql_bin() -> Path | None:
    """The newest installed server's programs (Debian's layout), None when there is none."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda path: int(Path(path).parts[-3]))
    return Path(found[-1]).parent if found else None


def as_server_user(args: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


class Cluster:
    def __init__(self, folder: Path, name: str, programs: Path):
        self.data = folder / name
        self.log = folder / f"{name}.log"
        self.port = free_port()
        self.programs = programs
        self.folder = folder

    def run(self, program: str, *args: str, timeout: float = 120) -> None:
        command = as_server_user([str(self.programs / program), *args])
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
        if result.returncode:
            log = self.log.read_text()[-3000:] if self.log.exists() else ""
            raise AssertionError(f"{program} {' '.join(args)} failed:\n{result.stdout}{result.stderr}{log}")

    def configure(self, lines: str) -> None:
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.write(lines)

    def start(self) -> None:
        self.run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        self.run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def connect(self, dbname: str = DATABASE) -> psycopg.Connection:
        return psycopg.connect(host="127.0.0.1", port=self.port, user="postgres", dbname=dbname,
                               autocommit=True, connect_timeout=5)

    def one(self, sql: str, params=None, dbname: str = DATABASE):
        with self.connect(dbname) as connection:
            return connection.execute(sql, params).fetchone()

    def execute(self, sql: str, params=None, dbname: str = DATABASE) -> None:
        with self.connect(dbname) as connection:
            connection.execute(sql, params)

    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{DATABASE}"


class ReplicatedPostgres:
    """Starts the primary, then the replica from its base backup, streaming."""

    def __init__(self, programs: Path):
        self.folder = Path(tempfile.mkdtemp(prefix="nodelodge-replica-"))
        if os.geteuid() == 0:
            server_user = pwd.getpwnam("postgres")
            os.chown(self.folder, server_user.pw_uid, server_user.pw_gid)
        self.primary = Cluster(self.folder, "primary", programs)
        self.replica = Cluster(self.folder, "replica", programs)
        self.started: list[Cluster] = []

    def start(self) -> None:
        primary, replica = self.primary, self.replica
        primary.run("initdb", "-D", str(primary.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                    "--locale=C", "--no-sync")
        primary.configure(
            f"\nport = {primary.port}\nlisten_addresses = '127.0.0.1'\n"
            f"unix_socket_directories = '{self.folder}'\nwal_level = replica\nmax_wal_senders = 4\n"
            "hot_standby = on\nfsync = off\nmax_connections = 60\n"
            # Which server ran which statement, counted at once on each (the replica's own counts).
            "shared_preload_libraries = 'pg_stat_statements'\n"
        )
        with open(primary.data / "pg_hba.conf", "a") as hba:
            hba.write("\nhost replication postgres 127.0.0.1/32 trust\n")
        primary.start()
        self.started.append(primary)
        primary.execute(f"CREATE DATABASE {DATABASE}", dbname="postgres")
        primary.execute("CREATE EXTENSION pg_stat_statements")
        replica.run("pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres",
                    "-D", str(replica.data), "-R", "-X", "stream", "--checkpoint=fast")
        replica.configure(f"\nport = {replica.port}\n")
        replica.start()
        self.started.append(replica)
        self.wait_streaming()

    def wait_streaming(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.primary.one("SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")[0]:
                return
            time.sleep(0.1)  # polling the primary for its WAL sender; nothing to wait on instead
        raise AssertionError(f"the replica did not stream within {timeout}s:\n{self.replica.log.read_text()[-3000:]}")

    def replayed(self) -> bool:
        """Whether the replica has replayed everything the primary has written so far."""
        target = self.primary.one("SELECT pg_current_wal_lsn()")[0]
        return bool(self.replica.one("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [target])[0])

    def statements_reading(self, cluster: Cluster, table: str) -> int:
        """How many statements naming `table` the cluster has run since it started."""
        return cluster.one(
            "SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements s JOIN pg_database d "
            "ON d.oid = s.dbid WHERE d.datname = %s AND s.query ILIKE %s", [DATABASE, f"%{table}%"]
        )[0]

    def stop(self) -> None:
        for cluster in reversed(self.started):
            try:
                cluster.stop("immediate")
            except AssertionError:
                pass  # already stopped by a test
        shutil.rmtree(self.folder, ignore_errors=True)
