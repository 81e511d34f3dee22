"""The config systems, one module each behind `base.ConfigSystem`; `registry` finds a module's `SYSTEMS`.

Adding a system is one module that defines `SYSTEMS` (and its kind in `model.Kind`); nothing else names it.
"""
