"""Policies, the Agent, explorers, learners and approximators."""
