"""Fixture streams written by MessagePack encoders in other languages: see README.md."""
