"""The SQLite store's versioned schema and its migrations.

Version 3 records the host and pid of each claim's process (``dive_claims.host``, ``pid``).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from dive.errors import UnsupportedSchemaError

__all__ = ["SCHEMA_VERSION", "migrate"]

SCHEMA_VERSION = 3

_MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE dive_sessions (
        id TEXT PRIMARY KEY,
        revision INTEGER NOT NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        title TEXT,
        metadata TEXT NOT NULL DEFAULT '{}',
        turn_count INTEGER NOT NULL DEFAULT 0,
        suspended INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE dive_entries (
        session_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        revision INTEGER NOT NULL,
        kind TEXT NOT NULL,
        turn_id TEXT,
        status TEXT,
        superseded INTEGER NOT NULL DEFAULT 0,
        data TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    );
    CREATE INDEX dive_entries_turn ON dive_entries (session_id, turn_id);
    CREATE TABLE dive_claims (
        session_id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        expires_at REAL NOT NULL
    );
    """,
    2: """
    CREATE TABLE dive_steps (
        session_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        step INTEGER NOT NULL,
        revision INTEGER NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (session_id, seq, step)
    ) WITHOUT ROWID;
    """,
    3: """
    ALTER TABLE dive_claims ADD COLUMN host TEXT NOT NULL DEFAULT '';
    ALTER TABLE dive_claims ADD COLUMN pid INTEGER NOT NULL DEFAULT 0;
    """,
}


def migrate(conn: sqlite3.Connection, path: Path) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS dive_meta (key TEXT PRIMARY KEY, value TEXT)")
        row = conn.execute("SELECT value FROM dive_meta WHERE key = 'schema_version'").fetchone()
        current = int(row[0]) if row else 0
        if current > SCHEMA_VERSION:
            raise UnsupportedSchemaError(
                f"{path} has dive session schema version {current}, newer than this dive "
                f"understands ({SCHEMA_VERSION}); upgrade dive-agents to open it"
            )
        for version in range(current + 1, SCHEMA_VERSION + 1):
            for statement in _MIGRATIONS[version].split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(
                "INSERT INTO dive_meta (key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (str(version),),
            )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:  # cleanup after an error already raised
                pass
        raise
