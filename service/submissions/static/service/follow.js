// Follows a queued submission without reloading: polls its status, shows each section as soon as
// its points are settled, and reloads once the grading is done.
"use strict";
(function () {
  const box = document.querySelector("[data-follow]");
  if (!box) return;
  const url = box.getAttribute("data-follow");
  const state = box.querySelector("[data-state]");
  const place = box.querySelector("[data-position]");
  const list = document.querySelector("[data-sections]");
  const none = document.querySelector("[data-none]");
  function points(n) { return (Math.round(n * 100) / 100).toString(); }
  let shown = "";
  function show(sections) {
    if (!list || !Array.isArray(sections)) return;
    const now = JSON.stringify(sections);
    if (now === shown) return;  // nothing new (a retried run may replace them: compared whole)
    shown = now;
    list.replaceChildren.apply(list, sections.map(function (sec) {
      const item = document.createElement("li");
      const strong = document.createElement("strong");
      strong.textContent = points(sec.points) + " / " + points(sec.max_points);
      item.append(document.createTextNode(sec.title + ": "), strong);  // text only, never markup
      return item;
    }));
    if (none) none.hidden = sections.length > 0;
  }
  function tick() {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (body) {
        if (!body) return setTimeout(tick, 5000);
        state.textContent = body.status;
        place.textContent = body.queue_position ? "position " + body.queue_position + " in the queue" : "";
        show(body.sections);
        if (body.status === "queued" || body.status === "running") setTimeout(tick, 1500);
        else window.location.reload();
      })
      .catch(function () { setTimeout(tick, 5000); });
  }
  setTimeout(tick, 1000);
})();

// Drag and drop onto the upload form fills its file field.
(function () {
  const zone = document.querySelector("[data-drop]");
  if (!zone) return;
  const input = zone.querySelector("input[type=file]");
  zone.addEventListener("dragover", function (e) { e.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", function () { zone.classList.remove("over"); });
  zone.addEventListener("drop", function (e) {
    e.preventDefault();
    zone.classList.remove("over");
    if (e.dataTransfer && e.dataTransfer.files.length) input.files = e.dataTransfer.files;
  });
})();
