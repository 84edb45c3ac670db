"""Two published DynamoDB queue designs, rebuilt from their design descriptions behind the bench's interface.

Each keeps its own table in the same moto, so every figure compares designs under one backend and one meter.
"""

from .hidden_until import HiddenUntilQueue
from .status_index import StatusIndexQueue

__all__ = ["HiddenUntilQueue", "StatusIndexQueue"]
