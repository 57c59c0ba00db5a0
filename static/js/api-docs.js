/* The API reference page (Swagger UI): its copy buttons get a name, and its scrolling code blocks
   can be reached from the keyboard, whenever Swagger UI draws them. */
(function () {
  "use strict";
  function mend() {
    var buttons = document.querySelectorAll(".copy-to-clipboard > button:not([aria-label])");
    for (var i = 0; i < buttons.length; i++) buttons[i].setAttribute("aria-label", "Copy to clipboard");
    var blocks = document.querySelectorAll("#swagger-ui pre:not([tabindex])");
    for (var j = 0; j < blocks.length; j++) blocks[j].setAttribute("tabindex", "0");
  }
  new MutationObserver(mend).observe(document.documentElement, { childList: true, subtree: true });
})();
