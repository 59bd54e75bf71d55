"""The Web Push tests' gateway with a local push service (tests/webpush/support.py)."""

from tests.webpush.support import rig as rig
