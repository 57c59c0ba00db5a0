/* Node Lodge console: field messages as you type, in the words the server uses (the inputs carry
   them in data-msg-* attributes, written from the one query module). The server checks again. */
(function () {
  "use strict";
  function messageFor(input) {
    var v = input.validity;
    if (v.valid) return "";
    if (v.badInput || v.typeMismatch) return input.dataset.msgInvalid || "";
    if (v.rangeUnderflow) return input.dataset.msgMin || "";
    if (v.rangeOverflow) return input.dataset.msgMax || "";
    if (v.stepMismatch) return input.dataset.msgStep || "";
    return input.dataset.msgInvalid || "";
  }
  function check(event) {
    var input = event.target;
    if (!input.dataset || input.dataset.msgInvalid === undefined) return;
    var box = document.getElementById("err-" + input.name);
    var message = messageFor(input);
    if (message) {
      input.setAttribute("aria-invalid", "true");
      if (box) { box.textContent = message; box.hidden = false; }
    } else if (box && box.dataset.client === "1") {
      input.removeAttribute("aria-invalid");
      box.hidden = true;
      box.textContent = "";
    }
    if (box) box.dataset.client = message ? "1" : "";
  }
  document.addEventListener("input", check);
  // The language switch keeps the page as it is now: HTMX swaps change the address after the links
  // were written, so once the address has changed the link takes it when followed (the server pushes
  // the canonical address). Until then the link keeps the canonical address the server wrote, not
  // the one typed (without JavaScript every change is a page load, and the links are already current).
  var loadedAddress = window.location.pathname + window.location.search;
  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest(".language-switch a[data-language]") : null;
    if (!link) return;
    if (window.location.pathname + window.location.search === loadedAddress) return;
    var url = new URL(link.href, window.location.href);
    url.searchParams.set("next", window.location.pathname + window.location.search);
    link.href = url.toString();
  });
  // A machine's start command: the copy button puts the command's text on the clipboard and says so.
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button.copy-command") : null;
    if (!button) return;
    var source = document.getElementById(button.dataset.copyFrom);
    if (!source || !navigator.clipboard) return;
    navigator.clipboard.writeText(source.textContent).then(function () {
      button.textContent = button.dataset.copied;
    });
  });
  // A flash message says what the last page load did. The next swap (which also changes the
  // address) makes a later page, where it no longer belongs: it goes, as a page load would drop it.
  document.addEventListener("htmx:afterSwap", function () {
    var shown = document.querySelectorAll("main > .messages");
    for (var i = 0; i < shown.length; i++) shown[i].remove();
  });
})();
