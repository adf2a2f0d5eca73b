// dsh session viewer: follows a live session through server-sent events. The server
// renders (and escapes) every card; this script only places the HTML it sends.
"use strict";
(function () {
  var events = document.getElementById("events");
  if (!events || events.dataset.live !== "true") {
    return;
  }
  var id = events.dataset.session;
  var next = events.dataset.next;
  var source = new EventSource("/session/" + encodeURIComponent(id) + "/events?from=" + encodeURIComponent(next));

  function place(msg) {
    var tpl = document.createElement("template");
    tpl.innerHTML = msg.html;
    var target = events;
    if (msg.parent || msg.root) {
      target = document.getElementById("subs-" + msg.parent) || document.getElementById("subs-" + msg.root) || events;
    }
    target.appendChild(tpl.content);
    if (msg.answered) {
      var q = document.getElementById("q-" + msg.answered);
      if (q) {
        var answer = q.querySelector(".answer, .answer-elsewhere");
        if (answer) {
          answer.remove();
        }
      }
    }
  }

  source.addEventListener("ev", function (e) {
    place(JSON.parse(e.data));
    events.dataset.next = String(Number(e.lastEventId) + 1);
    document.body.dataset.received = events.dataset.next;
  });
  source.addEventListener("status", function (e) {
    var s = JSON.parse(e.data);
    var badge = document.getElementById("status");
    if (badge) {
      badge.textContent = s.status;
      badge.className = "badge badge-" + s.status;
    }
    if (!s.live) {
      var note = document.getElementById("live-note");
      if (note) {
        note.textContent = "The session stopped running.";
      }
    }
  });
  source.addEventListener("failure", function (e) {
    var p = document.createElement("p");
    p.className = "error";
    p.textContent = JSON.parse(e.data).error;
    events.appendChild(p);
  });
})();
