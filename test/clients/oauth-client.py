# Debian's python3-requests-oauthlib getting a token by OAuth2 client credentials (the API key's
# id as client_id, the key as client_secret) and reading the sources with it, as a Python
# script would. Prints one JSON object per way of sending the client's credentials: HTTP Basic
# (requests-oauthlib's default) and form fields (include_client_id=True); then what a wrong
# secret raises.
# Usage: SR_BASE=http://127.0.0.1:3000 SR_CLIENT_ID=... SR_CLIENT_SECRET=srk_... \
#   OAUTHLIB_INSECURE_TRANSPORT=1 /usr/bin/python3 oauth-client.py
import json
import os

from oauthlib.oauth2 import BackendApplicationClient
from oauthlib.oauth2.rfc6749.errors import OAuth2Error
from requests_oauthlib import OAuth2Session

base = os.environ['SR_BASE']
client_id, secret = os.environ['SR_CLIENT_ID'], os.environ['SR_CLIENT_SECRET']
token_url = f'{base}/oauth/token'

for how, include_client_id in (('basic', False), ('form', True)):
    session = OAuth2Session(client=BackendApplicationClient(client_id=client_id))
    token = session.fetch_token(token_url=token_url, client_id=client_id, client_secret=secret, include_client_id=include_client_id)
    items = session.get(f'{base}/collections/sources/items', params={'limit': 1000})
    body = items.json()
    print(json.dumps({
        'how': how,
        'token_type': token['token_type'],
        'scope': token.get('scope'),
        'expires_in': token['expires_in'],
        'status': items.status_code,
        'number_matched': body.get('numberMatched'),
        'feature_ids': sorted(f['properties']['feature_id'] for f in body.get('features', []))
    }))

try:
    OAuth2Session(client=BackendApplicationClient(client_id=client_id)).fetch_token(token_url=token_url, client_id=client_id, client_secret=secret[:-1] + ('A' if secret[-1] != 'A' else 'B'))
    print(json.dumps({'how': 'wrong secret', 'error': None}))
except OAuth2Error as err:
    print(json.dumps({'how': 'wrong secret', 'error': err.error, 'status': err.status_code}))
