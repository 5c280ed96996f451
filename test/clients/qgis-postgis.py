# QGIS (Debian's python3-qgis, headless) opening the embedded database's `sources` table as a
# PostGIS layer through EMBEDDED_SQL_PORT, with the connection docs/analysts.md gives, and a layer
# made from a query (as DB Manager's "Load as new layer" does). Prints one JSON object.
# Usage: SR_SQL_PORT=5433 QT_QPA_PLATFORM=offscreen /usr/bin/python3 qgis-postgis.py <profile dir>
import json
import os
import sys

from qgis.core import Qgis, QgsApplication, QgsDataSourceUri, QgsVectorLayer, QgsWkbTypes

QgsApplication.setPrefixPath('/usr', True)
app = QgsApplication([], False, sys.argv[1])
app.initQgis()

uri = QgsDataSourceUri()
uri.setConnection('127.0.0.1', os.environ['SR_SQL_PORT'], 'postgres', 'postgres', '')
uri.setDataSource('public', 'sources', 'geom', '', 'id')
layer = QgsVectorLayer(uri.uri(False), 'sources', 'postgres')
out = {'qgis': Qgis.QGIS_VERSION, 'valid': layer.isValid()}
if layer.isValid():
    out['feature_count'] = layer.featureCount()
    out['geometry'] = QgsWkbTypes.displayString(layer.wkbType())
    out['crs'] = layer.crs().authid()
    out['feature_ids'] = sorted(f['feature_id'] for f in layer.getFeatures())
else:
    out['error'] = layer.error().summary()

query = QgsDataSourceUri()
query.setConnection('127.0.0.1', os.environ['SR_SQL_PORT'], 'postgres', 'postgres', '')
query.setDataSource('', "(SELECT id, organisation, geom FROM sources WHERE organisation = 'org-b')", 'geom', '', 'id')
per_org = QgsVectorLayer(query.uri(False), 'org-b', 'postgres')
out['query_valid'] = per_org.isValid()
if per_org.isValid():
    out['query_count'] = sum(1 for _ in per_org.getFeatures())
print(json.dumps(out), flush=True)
# Layers go before the application, or QGIS crashes on the way out.
del layer, per_org
app.exitQgis()
