# QGIS (Debian's python3-qgis, headless) writing a layer of multipart parcels with attributes as
# GeoJSON through QgsVectorFileWriter, as "Export → Save Features As… → GeoJSON" does: a memory
# layer in EPSG:4326 with a MultiPolygon of two parts and one of one part, a text parcel number, a
# name, a real, and start_at/end_at as Date fields. Prints one JSON object: the QGIS version and
# the file written.
# Usage: QT_QPA_PLATFORM=offscreen /usr/bin/python3 qgis-write-geojson.py <profile dir> <out.geojson>
import json
import sys

from qgis.core import (Qgis, QgsApplication, QgsCoordinateTransformContext, QgsFeature, QgsField, QgsGeometry,
                       QgsVectorFileWriter, QgsVectorLayer)
from qgis.PyQt.QtCore import QDate, QVariant

QgsApplication.setPrefixPath('/usr', True)
app = QgsApplication([], False, sys.argv[1])
app.initQgis()

layer = QgsVectorLayer('MultiPolygon?crs=EPSG:4326', 'parcels', 'memory')
provider = layer.dataProvider()
provider.addAttributes([QgsField('parcel_no', QVariant.String), QgsField('name', QVariant.String), QgsField('hectares', QVariant.Double),
                        QgsField('start_at', QVariant.Date), QgsField('end_at', QVariant.Date)])
layer.updateFields()
rows = [
    ('QG-1', 'Noord', 2.5, 'MULTIPOLYGON(((6 53, 6.01 53, 6.01 53.01, 6 53.01, 6 53)), ((6.02 53, 6.03 53, 6.03 53.01, 6.02 53.01, 6.02 53)))'),
    ('QG-2', 'Zuid', 1.0, 'MULTIPOLYGON(((6.1 53, 6.11 53, 6.11 53.01, 6.1 53.01, 6.1 53), (6.102 53.002, 6.104 53.002, 6.104 53.004, 6.102 53.004, 6.102 53.002)))'),
]
for parcel_no, name, hectares, wkt in rows:
    f = QgsFeature(layer.fields())
    f.setAttributes([parcel_no, name, hectares, QDate(2024, 1, 1), QDate(2025, 1, 1)])
    f.setGeometry(QgsGeometry.fromWkt(wkt))
    provider.addFeature(f)

options = QgsVectorFileWriter.SaveVectorOptions()
options.driverName = 'GeoJSON'
options.fileEncoding = 'UTF-8'
result = QgsVectorFileWriter.writeAsVectorFormatV3(layer, sys.argv[2], QgsCoordinateTransformContext(), options)
print(json.dumps({'qgis': Qgis.QGIS_VERSION, 'error': result[0], 'message': result[1]}), flush=True)
del layer
app.exitQgis()
