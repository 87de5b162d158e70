"""The class is the cluster: students' kernels join the lecturer's run as workers, over the network.

    room = aps.classroom.serve(problem, workers=30, policy="async", lr=0.1, steps=3000)  # lecturer
    aps.classroom.join(room.address, token=room.token, name="ada", problem=problem)      # student
    room.start()                                                                         # lecturer

    room.py     the lecturer's room: one parameter server, its seats, and the semantics it enforces
    door.py     the one socket a room listens on: who may connect, and the limits on what they send
    student.py  join(): this kernel runs the worker loop against the room; fill(): stand-in
                students in this kernel take the empty seats
    wire.py     a message: a JSON header and an array's raw bytes, checked (no pickle); the token
"""
from .room import Room, fingerprint, serve
from .student import Contribution, Refused, RoomLost, StandIns, fill, join

__all__ = ["serve", "join", "fill", "Room", "Contribution", "Refused", "RoomLost", "StandIns",
           "fingerprint"]
