"""The upload form, shared by the owner's dashboard and an upload request's
page: one or more files, each obeying the same rules as an API upload."""

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from sharing.models import check_upload


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Django's FileField, for an <input type=file multiple>: a list of files."""

    def __init__(self, **kwargs):
        super().__init__(widget=MultipleFileInput(), **kwargs)

    def clean(self, data, initial=None):
        uploads = [upload for upload in (data if isinstance(data, list | tuple) else [data]) if upload]
        if not uploads:
            raise ValidationError(_("Choose at least one file."), code="required")
        return [super(MultipleFileField, self).clean(upload, initial) for upload in uploads]


class UploadForm(forms.Form):
    """One or more files; each obeys the same rules as an API upload."""

    files = MultipleFileField(label=_("Files"), allow_empty_file=True)

    def clean_files(self):
        for upload in self.cleaned_data["files"]:
            check_upload(upload)  # UploadTooLarge (answered with a 413) or a bad Content-Type
        return self.cleaned_data["files"]

    @property
    def too_large(self) -> bool:
        return any(error.code == "too_large" for error in self.errors.as_data().get("files", []))
