"""Reinforcement-learning algorithms, each a Policy subtype in a module of its own."""
