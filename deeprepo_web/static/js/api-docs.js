// /api/docs: start Swagger UI with the settings the page carries (no inline script under our CSP).
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  const settings = JSON.parse(document.getElementById("swagger-settings").textContent);
  const csrf = document.body.dataset.csrfToken;
  window.ui = SwaggerUIBundle(Object.assign(settings, {
    dom_id: "#swagger-ui",
    layout: "BaseLayout",
    // "Try it out" with the session of a logged-in user: writes need the CSRF token.
    requestInterceptor: function (req) {
      if (csrf && req.method && req.method.toUpperCase() !== "GET") req.headers["X-CSRFToken"] = csrf;
      return req;
    },
  }));
});
