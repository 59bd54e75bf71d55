// Keyboard shortcuts for the inbox list and the approval page (a static file: the pages' CSP
// allows no inline script). j/k move, x selects, a approves, r rejects, e edits (on the list:
// opens), Enter/o opens, ? shows the help. Keys typed into a field are the field's.
// a and r press the page's own buttons ([data-action]), so every decision goes through the
// same form, CSRF token and server-side checks as a click.
(function () {
  "use strict";

  var HELP = [
    ["j / k", "next / previous approval"],
    ["x", "select the approval (list)"],
    ["a", "approve (list: the selected, or the current one)"],
    ["r", "reject (list: the selected, or the current one)"],
    ["e", "edit the arguments (list: open the approval)"],
    ["Enter or o", "open the current approval"],
    ["?", "show or hide this help"],
    ["Esc", "close this help"],
  ];
  var cursor = -1;

  function rows() {
    return Array.prototype.slice.call(document.querySelectorAll("[data-keys=rows] tr[data-row]"));
  }

  function action(name) {
    // The WEBUI's buttons carry data-action; a page without them still has its outcome buttons.
    return (
      document.querySelector('[data-action="' + name + '"]') ||
      (name === "edit"
        ? document.querySelector("fieldset.edit-args input, fieldset.edit-args textarea")
        : document.querySelector('button[name="outcome"][value="' + name + '"]'))
    );
  }

  function current() {
    var all = rows();
    if (cursor >= all.length) {
      cursor = all.length - 1;
    }
    return cursor >= 0 ? all[cursor] : null;
  }

  function move(step) {
    var all = rows();
    if (!all.length) {
      var link = document.querySelector(step > 0 ? 'a[rel="next"]' : 'a[rel="prev"]');
      if (link) {
        window.location.assign(link.href);
      }
      return;
    }
    all.forEach(function (r) {
      r.classList.remove("cursor");
      r.removeAttribute("aria-current");
    });
    cursor = cursor < 0 ? (step > 0 ? 0 : all.length - 1) : Math.min(all.length - 1, Math.max(0, cursor + step));
    var row = all[cursor];
    row.classList.add("cursor");
    row.setAttribute("aria-current", "true");
    var focus = row.querySelector("a") || row;
    focus.focus();
    if (row.scrollIntoView) {
      row.scrollIntoView({ block: "nearest" });
    }
  }

  function pick(row) {
    var box = row && row.querySelector('input[type="checkbox"]');
    if (box) {
      box.checked = !box.checked;
    }
  }

  function open(row) {
    if (row && row.getAttribute("data-href")) {
      window.location.assign(row.getAttribute("data-href"));
    }
  }

  function decide(name) {
    var button = action(name);
    if (!button) {
      return;
    }
    if (rows().length) {
      var chosen = document.querySelectorAll('[data-keys=rows] input[type="checkbox"]:checked').length;
      if (!chosen) {
        var row = current();
        var box = row && row.querySelector('input[type="checkbox"]');
        if (!box) {
          return; // nothing selected, no current pending row: nothing to decide
        }
        box.checked = true;
      }
    }
    button.click();
  }

  function edit() {
    if (rows().length) {
      open(current());
      return;
    }
    var target = action("edit");
    if (target && target.tagName === "FIELDSET") {
      // the approval page marks its edit fieldset: the keys go to its first field
      target = target.querySelector("input, textarea, select");
    }
    if (target) {
      if (target.tagName !== "INPUT" && target.tagName !== "TEXTAREA" && target.tagName !== "SELECT") {
        target.click();
      }
      target.focus();
    }
  }

  function help() {
    var box = document.getElementById("keys-help");
    if (box) {
      if (box.open) {
        box.close();
      } else {
        box.showModal();
      }
      return;
    }
    box = document.createElement("dialog");
    box.id = "keys-help";
    box.className = "keys-help";
    box.setAttribute("aria-labelledby", "keys-help-h");
    var title = document.createElement("h2");
    title.id = "keys-help-h";
    title.textContent = "Keyboard shortcuts";
    box.appendChild(title);
    var list = document.createElement("dl");
    HELP.forEach(function (pair) {
      var key = document.createElement("dt");
      var kbd = document.createElement("kbd");
      kbd.textContent = pair[0];
      key.appendChild(kbd);
      var what = document.createElement("dd");
      what.textContent = pair[1];
      list.appendChild(key);
      list.appendChild(what);
    });
    box.appendChild(list);
    var close = document.createElement("button");
    close.type = "button";
    close.textContent = "Close";
    close.addEventListener("click", function () {
      box.close();
    });
    box.appendChild(close);
    document.body.appendChild(box);
    box.showModal();
  }

  function typing(el) {
    return el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  }

  document.addEventListener("keydown", function (ev) {
    if (ev.defaultPrevented || ev.ctrlKey || ev.metaKey || ev.altKey || typing(ev.target)) {
      return;
    }
    var dialog = document.getElementById("keys-help");
    if (dialog && dialog.open && ev.key !== "?") {
      return; // the dialog has the keys (Esc closes it)
    }
    var keys = {
      j: function () { move(1); },
      k: function () { move(-1); },
      x: function () { pick(current()); },
      a: function () { decide("approve"); },
      r: function () { decide("reject"); },
      e: edit,
      o: function () { open(current()); },
      "?": help,
    };
    var run = keys[ev.key];
    if (ev.key === "Enter" && rows().length && current() && ev.target === document.body) {
      run = function () { open(current()); };
    }
    if (run) {
      ev.preventDefault();
      run();
    }
  });
})();
