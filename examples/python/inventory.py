"""Stands for an application module: it reads $REDIS_URL when imported, as
many do, so the plugin must set it before the tests are collected."""

import os

import redis

REDIS_URL = os.environ["REDIS_URL"]


def reserve(item: str, holder: str) -> bool:
    """Takes `item` for `holder` for 60 s; False if someone has it."""
    with redis.Redis.from_url(REDIS_URL) as conn:
        return bool(conn.set(f"reserved:{item}", holder, nx=True, px=60_000))
