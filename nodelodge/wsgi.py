import os

from django.core.wsgi import get_wsgi_application

from nodelodge.stack_room import call_with_room

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nodelodge.settings")
django_application = get_wsgi_application()


def application(environ, start_response):
    # Each request runs with room on the frame stack (nodelodge/stack_room.py says why).
    return call_with_room(django_application, environ, start_response)
