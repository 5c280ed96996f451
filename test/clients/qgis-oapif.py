# QGIS (Debian's python3-qgis, headless) opening the service's `sources` layer over OGC API -
# Features with its "Basic" authentication method and an API key as the password, the way a user
# sets it up in the desktop: the configuration is stored, encrypted, in the auth database of a
# fresh QGIS profile directory under a master password. Prints one JSON object: whether the layer
# is valid, its feature count, and the feature ids inside a bbox.
# Usage: SR_BASE=http://127.0.0.1:3000 SR_KEY=srk_... SR_BBOX=xmin,ymin,xmax,ymax \
#   QT_QPA_PLATFORM=offscreen /usr/bin/python3 qgis-oapif.py <profile dir>
import json
import os
import sys

from qgis.core import (Qgis, QgsApplication, QgsAuthMethodConfig, QgsFeatureRequest,
                       QgsRectangle, QgsVectorLayer, QgsWkbTypes)

base, key = os.environ['SR_BASE'], os.environ['SR_KEY']
bbox = [float(v) for v in os.environ['SR_BBOX'].split(',')]
profile = sys.argv[1]

QgsApplication.setPrefixPath('/usr', True)
app = QgsApplication([], False, profile)
app.initQgis()

auth = QgsApplication.authManager()
if not auth.setMasterPassword('master password of this test profile', True):
    sys.exit('could not set the master password')
config = QgsAuthMethodConfig('Basic')
config.setName('source registry (API key)')
config.setConfig('username', 'qgis')
config.setConfig('password', key)
if not auth.storeAuthenticationConfig(config):
    sys.exit('could not store the authentication configuration')

layer = QgsVectorLayer(f"url='{base}/' typename='sources' restrictToRequestBBOX='1' authcfg='{config.id()}'", 'sources', 'OAPIF')
out = {'qgis': Qgis.QGIS_VERSION, 'authcfg': config.id(), 'auth_db': auth.authenticationDatabasePath(), 'valid': layer.isValid()}
if layer.isValid():
    out['feature_count'] = layer.featureCount()
    out['geometry'] = QgsWkbTypes.displayString(layer.wkbType())
    request = QgsFeatureRequest().setFilterRect(QgsRectangle(*bbox))
    out['in_bbox'] = sorted(f['feature_id'] for f in layer.getFeatures(request))
    out['all'] = sorted(f['feature_id'] for f in layer.getFeatures())
print(json.dumps(out), flush=True)
# Layers go before the application, or QGIS crashes on the way out.
del layer
app.exitQgis()
