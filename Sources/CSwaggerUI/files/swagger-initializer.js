window.onload = function() {
  //<editor-fold desc="Changeable Configuration Block">

  // the following lines will be replaced by docker/configurator, when it runs in a docker-container
  window.ui = SwaggerUIBundle({
      "dom_id": "#swagger-ui",
  "url": "/api-docs/openapi.json",
  "deepLinking": true,
  "layout": "StandaloneLayout",
    presets: [
      SwaggerUIBundle.presets.apis,
      SwaggerUIStandalonePreset
    ],
    plugins: [
      SwaggerUIBundle.plugins.DownloadUrl
    ],
    
  });

  //</editor-fold>
};
