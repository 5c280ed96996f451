# QGIS (Debian's python3-qgis, headless) opening the service's `sources` layer over OGC API -
# Features with its "Basic" authentication method and an API key as the password, the way a user
# sets it up in the desktop: the configuration is stored, encrypted, in the auth database of a
# fresh QGIS profile directory under a master password. Prints one JSON object: whether the layer
# is valid, its feature count, and the feature ids inside a bbox; with SR_THEN_KEY, the same for
# the same URL opened again in the same process with that key (under "then").
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


def open_layer(with_key):
    """The layer opened with a Basic configuration holding `with_key`, and what QGIS says of it."""
    config = QgsAuthMethodConfig('Basic')
    config.setName('source registry (API key)')
    config.setConfig('username', 'qgis')
    config.setConfig('password', with_key)
    if not auth.storeAuthenticationConfig(config):
        sys.exit('could not store the authentication configuration')
    layer = QgsVectorLayer(f"url='{base}/' typename='sources' restrictToRequestBBOX='1' authcfg='{config.id()}'", 'sources', 'OAPIF')
    out = {'authcfg': config.id(), 'valid': layer.isValid()}
    if layer.isValid():
        out['feature_count'] = layer.featureCount()
        out['geometry'] = QgsWkbTypes.displayString(layer.wkbType())
        request = QgsFeatureRequest().setFilterRect(QgsRectangle(*bbox))
        out['in_bbox'] = sorted(f['feature_id'] for f in layer.getFeatures(request))
        out['all'] = sorted(f['feature_id'] for f in layer.getFeatures())
    return layer, out


layer, out = open_layer(key)
out.update({'qgis': Qgis.QGIS_VERSION, 'auth_db': auth.authenticationDatabasePath()})
layers = [layer]
# SR_THEN_KEY: the same URL opened again in this process (its network cache warm) with another key.
if os.environ.get('SR_THEN_KEY'):
    second, out['then'] = open_layer(os.environ['SR_THEN_KEY'])
    layers.append(second)
    del second
print(json.dumps(out), flush=True)
# Layers go before the application, or QGIS crashes on the way out.
del layer, layers
app.exitQgis()
