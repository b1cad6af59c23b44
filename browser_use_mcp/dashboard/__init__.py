"""A live web dashboard of every session, with human takeover (docs/dashboard.md).

``app`` is the web side (authentication, routes, pages); ``live`` takes frames and forwards a
person's input. The page itself is plain HTML, CSS and JavaScript in ``static/``.
"""
