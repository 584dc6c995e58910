from __future__ import annotations

urlpatterns: list[object] = []  # LTI 1.3 login, launch and JWKS views are added with the LTI app
