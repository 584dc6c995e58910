// LTI Dynamic Registration's last step: tell the LMS page that opened us that we are done.
"use strict";
(function () {
  const box = document.querySelector("[data-lti-close]");
  if (!box) return;
  const platform = window.opener || window.parent;
  if (platform && platform !== window) {
    platform.postMessage({ subject: "org.imsglobal.lti.close" }, box.getAttribute("data-origin"));
  }
})();
