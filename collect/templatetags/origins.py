"""{% load origins %}: which upload request the files of a list arrived
through, asked once for the whole list, and said beside each file's name.

    {% origins_of file_page as origins %}
    ... {{ file.name }}{% arrived_through file origins %}
"""

from django import template
from django.template.loader import render_to_string

from collect import models

register = template.Library()


@register.simple_tag
def origins_of(files) -> dict:
    """{file id: its upload request} for the files (a list or a page) that arrived through one."""
    return models.origins(stored.pk for stored in files)


@register.simple_tag
def arrived_through(stored, origins: dict) -> str:
    """ " from the upload request “Scans”" for a file that arrived through one, else nothing."""
    upload_request = origins.get(stored.pk)
    if upload_request is None:
        return ""
    return render_to_string("collect/_origin.html", {"upload_request": upload_request})
