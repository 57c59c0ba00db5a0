/* The API reference page (Swagger UI): its copy buttons and its parameters' fields get a name, and its
   scrolling code blocks can be reached from the keyboard, whenever Swagger UI draws them. */
(function () {
  "use strict";
  function mend() {
    var buttons = document.querySelectorAll(".copy-to-clipboard > button:not([aria-label])");
    for (var i = 0; i < buttons.length; i++) buttons[i].setAttribute("aria-label", "Copy to clipboard");
    var fields = document.querySelectorAll(
      "tr[data-param-name] select:not([aria-label]), tr[data-param-name] input:not([aria-label])");
    for (var k = 0; k < fields.length; k++) {
      fields[k].setAttribute("aria-label", fields[k].closest("tr").getAttribute("data-param-name"));
    }
    var blocks = document.querySelectorAll("#swagger-ui pre:not([tabindex])");
    for (var j = 0; j < blocks.length; j++) blocks[j].setAttribute("tabindex", "0");
  }
  new MutationObserver(mend).observe(document.documentElement, { childList: true, subtree: true });
})();
